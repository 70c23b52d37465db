"""PipelineRouter: per-model pipelines are LRU-bounded and evicted ones are closed once idle."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from services.synthesis.extractive import ExtractiveGenerator
from services.synthesis.pipeline import SynthesisPipeline
from services.synthesis.routing import PipelineRouter
from tests.unit.synthesis.fakes import FakeRetriever, RuleValidator


@dataclass
class Resource:
    model: str
    closed: int = 0
    fail: bool = False

    async def aclose(self) -> None:
        self.closed += 1
        if self.fail:
            raise RuntimeError("close failed")


def new_pipeline() -> SynthesisPipeline:
    return SynthesisPipeline(FakeRetriever(), RuleValidator(), ExtractiveGenerator())


class Factory:
    def __init__(self) -> None:
        self.built: dict[str, tuple[SynthesisPipeline, Resource]] = {}

    def __call__(self, model: str) -> tuple[SynthesisPipeline, Resource]:
        built = (new_pipeline(), Resource(model))
        self.built[model] = built
        return built


def router(capacity: int = 2) -> tuple[PipelineRouter, SynthesisPipeline, Factory]:
    default, factory = new_pipeline(), Factory()
    return (
        PipelineRouter(default, default_model="base", factory=factory, capacity=capacity),
        default,
        factory,
    )


class TestPipelineRouter:
    @pytest.mark.parametrize("model", ["", "base"])
    async def test_lease_default_model_uses_the_default_pipeline(self, model: str) -> None:
        routes, default, factory = router()

        async with routes.lease(model) as pipeline:
            assert pipeline is default

        assert factory.built == {} and routes.models == ()

    async def test_lease_reuses_the_pipeline_of_a_known_model(self) -> None:
        routes, default, factory = router()

        async with routes.lease("a") as first:
            pass
        async with routes.lease("a") as second:
            pass

        assert first is second is factory.built["a"][0] and first is not default
        assert list(factory.built) == ["a"]

    async def test_lease_is_bounded_and_closes_the_least_recently_used(self) -> None:
        routes, _, factory = router(capacity=2)

        for model in ("a", "b", "a", "c", "d"):
            async with routes.lease(model):
                pass

        # "b" went first (a was used again after it), then "a".
        assert routes.models == ("c", "d")
        assert {m: r.closed for m, (_, r) in factory.built.items()} == {
            "a": 1,
            "b": 1,
            "c": 0,
            "d": 0,
        }

    async def test_lease_many_distinct_models_never_grows_past_capacity(self) -> None:
        routes, _, factory = router(capacity=3)

        for n in range(50):
            async with routes.lease(f"model-{n}"):
                pass

        assert len(routes.models) == 3
        assert sum(r.closed for _, r in factory.built.values()) == 47

    async def test_evicted_pipeline_in_use_is_closed_only_after_its_request(self) -> None:
        routes, _, factory = router(capacity=1)

        async with routes.lease("a"):
            async with routes.lease("b"):
                pass  # evicts "a" while a request still holds it
            resource = factory.built["a"][1]
            assert resource.closed == 0
        assert resource.closed == 1

    async def test_close_failure_does_not_fail_the_request(self) -> None:
        routes, _, factory = router(capacity=1)
        async with routes.lease("a"):
            pass
        factory.built["a"][1].fail = True

        async with routes.lease("b") as pipeline:
            assert pipeline is factory.built["b"][0]

        assert factory.built["a"][1].closed == 1

    async def test_aclose_closes_every_variant(self) -> None:
        routes, _, factory = router(capacity=4)
        for model in ("a", "b"):
            async with routes.lease(model):
                pass

        await routes.aclose()

        assert routes.models == () and all(r.closed == 1 for _, r in factory.built.values())

    async def test_lease_without_factory_always_uses_the_default(self) -> None:
        default = new_pipeline()
        routes = PipelineRouter(default, default_model="base")

        async with routes.lease("anything") as pipeline:
            assert pipeline is default

    def test_router_rejects_a_zero_capacity(self) -> None:
        with pytest.raises(ValueError, match="capacity"):
            PipelineRouter(new_pipeline(), capacity=0)

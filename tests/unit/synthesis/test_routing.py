"""GeneratorPool: per-model generators are LRU-bounded and evicted ones are closed once idle;
one pipeline answers with the leased generators; which generators a configuration offers."""

from __future__ import annotations

import pytest

from services.synthesis.config import SynthesisConfig
from services.synthesis.extractive import ExtractiveGenerator
from services.synthesis.generation import GenerationRequest, GenerationResult
from services.synthesis.pipeline import SynthesisPipeline
from services.synthesis.routing import GeneratorPool, ModelChoice, offered_generators
from tests.unit.synthesis.fakes import FakeRetriever, RuleValidator


class ModelFake:
    """An OpenAI-like generator for one model: counts warm-ups and closes."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.closed = 0
        self.warmed = 0
        self.fail = False

    @property
    def name(self) -> str:
        return "openai"

    async def generate(self, request: GenerationRequest, *, timeout_s: float) -> GenerationResult:
        raise AssertionError("not called in these tests")

    async def warm_up(self) -> None:
        self.warmed += 1

    async def aclose(self) -> None:
        self.closed += 1
        if self.fail:
            raise RuntimeError("close failed")


class Factory:
    def __init__(self) -> None:
        self.built: dict[str, ModelFake] = {}

    def __call__(self, model: str) -> ModelFake:
        built = ModelFake(model)
        self.built[model] = built
        return built


EXTRACTIVE = ExtractiveGenerator()


def pool(capacity: int = 2) -> tuple[GeneratorPool, ModelFake, Factory]:
    configured, factory = ModelFake("base"), Factory()
    choice = ModelChoice("openai", "base", factory)
    return (
        GeneratorPool([EXTRACTIVE, configured], models=choice, capacity=capacity),
        configured,
        factory,
    )


class TestGeneratorPool:
    @pytest.mark.parametrize("model", ["", "base"])
    async def test_lease_default_model_uses_the_configured_generators(self, model: str) -> None:
        generators, configured, factory = pool()

        async with generators.lease(model) as chosen:
            assert chosen["openai"] is configured and chosen["extractive"] is EXTRACTIVE

        assert factory.built == {} and generators.models == ()

    async def test_lease_reuses_the_generator_of_a_known_model(self) -> None:
        generators, configured, factory = pool()

        async with generators.lease("a") as first:
            pass
        async with generators.lease("a") as second:
            pass

        assert first["openai"] is second["openai"] is factory.built["a"]
        assert first["openai"] is not configured and first["extractive"] is EXTRACTIVE
        assert list(factory.built) == ["a"]

    async def test_lease_is_bounded_and_closes_the_least_recently_used(self) -> None:
        generators, _, factory = pool(capacity=2)

        for model in ("a", "b", "a", "c", "d"):
            async with generators.lease(model):
                pass

        # "b" went first (a was used again after it), then "a".
        assert generators.models == ("c", "d")
        assert {m: g.closed for m, g in factory.built.items()} == {"a": 1, "b": 1, "c": 0, "d": 0}

    async def test_lease_many_distinct_models_never_grows_past_capacity(self) -> None:
        generators, _, factory = pool(capacity=3)

        for n in range(50):
            async with generators.lease(f"model-{n}"):
                pass

        assert len(generators.models) == 3
        assert sum(g.closed for g in factory.built.values()) == 47

    async def test_evicted_generator_in_use_is_closed_only_after_its_request(self) -> None:
        generators, _, factory = pool(capacity=1)

        async with generators.lease("a"):
            async with generators.lease("b"):
                pass  # evicts "a" while a request still holds it
            assert factory.built["a"].closed == 0
        assert factory.built["a"].closed == 1

    async def test_close_failure_does_not_fail_the_request(self) -> None:
        generators, _, factory = pool(capacity=1)
        async with generators.lease("a"):
            pass
        factory.built["a"].fail = True

        async with generators.lease("b") as chosen:
            assert chosen["openai"] is factory.built["b"]

        assert factory.built["a"].closed == 1

    async def test_aclose_closes_every_model_generator_but_not_the_configured_ones(self) -> None:
        generators, configured, factory = pool(capacity=4)
        for model in ("a", "b"):
            async with generators.lease(model):
                pass

        await generators.aclose()

        assert generators.models == () and all(g.closed == 1 for g in factory.built.values())
        assert configured.closed == 0

    async def test_lease_without_models_always_uses_the_configured_generators(self) -> None:
        generators = GeneratorPool([EXTRACTIVE])

        async with generators.lease("anything") as chosen:
            assert dict(chosen) == {"extractive": EXTRACTIVE}

    def test_pool_rejects_a_zero_capacity(self) -> None:
        with pytest.raises(ValueError, match="capacity"):
            GeneratorPool([EXTRACTIVE], capacity=0)

    def test_pool_rejects_no_generator(self) -> None:
        with pytest.raises(ValueError, match="generator"):
            GeneratorPool([])


class TestOnePipeline:
    async def test_lease_gives_the_models_generator_and_shares_everything_else(self) -> None:
        generators, configured, factory = pool()
        pipeline = SynthesisPipeline(FakeRetriever(), RuleValidator(), generators)

        async with pipeline.lease("") as default, pipeline.lease("a") as other:
            assert default is pipeline
            assert other is not pipeline and other.generator_names == pipeline.generator_names
            assert other._generators["openai"] is factory.built["a"]
            assert pipeline._generators["openai"] is configured
            assert other._retriever is pipeline._retriever
            assert other._answerability is pipeline._answerability

    def test_pipeline_from_a_pool_takes_no_extra_generators(self) -> None:
        with pytest.raises(ValueError, match="pool"):
            SynthesisPipeline(
                FakeRetriever(),
                RuleValidator(),
                GeneratorPool([EXTRACTIVE]),
                generators=[EXTRACTIVE],
            )


def config(**env: str) -> SynthesisConfig:
    return SynthesisConfig.from_env(env)


class TestOfferedGenerators:
    def built(self, cfg: SynthesisConfig) -> tuple[GeneratorPool, ModelFake | None, Factory]:
        factory = Factory()
        generators, default_openai = offered_generators(cfg, extractive=EXTRACTIVE, openai=factory)
        assert default_openai is None or isinstance(default_openai, ModelFake)
        return generators, default_openai, factory

    async def test_offered_extractive_only_without_an_endpoint_or_key(self) -> None:
        generators, default_openai, factory = self.built(config())

        assert default_openai is None and list(generators.configured) == ["extractive"]
        async with generators.lease("gpt-4o") as chosen:
            assert list(chosen) == ["extractive"]
        assert factory.built == {}

    @pytest.mark.parametrize(
        "env",
        [
            {"SYNTHESIS_OPENAI_API_KEY": "sk-test"},
            {"SYNTHESIS_OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"},
        ],
    )
    async def test_offered_openai_beside_the_default_extractive(self, env: dict[str, str]) -> None:
        generators, default_openai, factory = self.built(config(**env))

        assert list(generators.configured) == ["extractive", "openai"]
        assert generators.default is EXTRACTIVE
        assert default_openai is factory.built[""]  # the configured model
        async with generators.lease("tiny-3b") as chosen:
            assert chosen["openai"] is factory.built["tiny-3b"]

    async def test_offered_openai_as_the_default(self) -> None:
        generators, default_openai, factory = self.built(
            config(SYNTHESIS_GENERATOR="openai", SYNTHESIS_OPENAI_MODEL="base-7b")
        )

        assert list(generators.configured) == ["openai", "extractive"]
        assert generators.default is default_openai
        async with generators.lease("base-7b") as chosen:
            assert chosen["openai"] is default_openai
        assert list(factory.built) == [""]

"""GeneratorPool: per-model generators are LRU-bounded and evicted ones are closed once idle;
a model the operator did not allow is refused and never built; one pipeline answers with the
leased generators; which generators a configuration offers."""

from __future__ import annotations

import logging

import pytest

from services.common.errors import InvalidInputError
from services.synthesis.config import SynthesisConfig
from services.synthesis.extractive import ExtractiveGenerator
from services.synthesis.generation import GenerationRequest, GenerationResult
from services.synthesis.pipeline import SynthesisPipeline
from services.synthesis.routing import (
    GeneratorPool,
    ModelChoice,
    model_not_offered,
    offered_generators,
)
from tests.unit.synthesis.fakes import FakeCatalogue, FakeRetriever, RuleValidator


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


def pool(
    capacity: int = 2, allowed: tuple[str, ...] | None = None
) -> tuple[GeneratorPool, ModelFake, Factory]:
    """A pool whose configured model is "base"; ``allowed`` None lets a request name any model
    (SYNTHESIS_OPENAI_ALLOWED_MODELS=*)."""
    configured, factory = ModelFake("base"), Factory()
    choice = ModelChoice("openai", "base", factory, allowed)
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


class TestAllowedModels:
    """Found by a security audit: a caller could make the endpoint run any model the API key
    can use ("o1-pro", a fine-tuned one); now the operator lists them."""

    async def test_a_model_not_allowed_is_invalid_argument_and_never_built(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        generators, _, factory = pool(allowed=("small-1b",))

        with caplog.at_level(logging.INFO), pytest.raises(InvalidInputError) as info:
            async with generators.lease("o1-pro"):
                pass

        (violation,) = info.value.violations
        assert violation.field == "model"
        assert violation.description == (
            "model 'o1-pro' is not offered by this server (offered: base, small-1b); its "
            "operator chooses the models callers may name"
        )
        # The setting that would offer it is the operator's: in the log, not the reply.
        assert "SYNTHESIS_OPENAI_ALLOWED_MODELS" in " ".join(r.getMessage() for r in caplog.records)
        assert factory.built == {} and generators.models == ()

    @pytest.mark.parametrize("model", ["", "base", "small-1b"])
    async def test_the_configured_and_the_listed_models_are_served(self, model: str) -> None:
        generators, configured, factory = pool(allowed=("small-1b",))

        async with generators.lease(model) as chosen:
            assert chosen["openai"] is factory.built.get(model, configured)

    async def test_without_a_list_only_the_configured_model_is_offered(self) -> None:
        generators, configured, factory = pool(allowed=())

        async with generators.lease("base") as chosen:
            assert chosen["openai"] is configured
        with pytest.raises(InvalidInputError, match=r"offered: base\)"):
            async with generators.lease("base-2"):
                pass
        assert factory.built == {}

    async def test_any_model_when_the_operator_allows_any(self) -> None:
        generators, _, factory = pool(allowed=None)

        async with generators.lease("o1-pro") as chosen:
            assert chosen["openai"] is factory.built["o1-pro"]

    @pytest.mark.parametrize(
        ("asked", "meant"),
        [
            ("GPT-4o-mini", "gpt-4o-mini"),
            ("gpt-4o-mni", "gpt-4o-mini"),
            ("llama3.1:8B", "llama3.1:8b"),
        ],
    )
    def test_a_near_miss_is_named_as_did_you_mean(self, asked: str, meant: str) -> None:
        choice = ModelChoice("openai", "gpt-4o-mini", Factory(), ("llama3.1:8b", "o3-mini"))

        said = model_not_offered(asked, choice)

        assert f"did you mean {meant!r}?" in said
        assert "(offered: gpt-4o-mini, llama3.1:8b, o3-mini)" in said

    def test_no_guess_for_a_name_like_none_offered(self) -> None:
        choice = ModelChoice("openai", "gpt-4o-mini", Factory(), ())

        assert "did you mean" not in model_not_offered("o1-pro", choice)

    def test_a_long_list_is_named_in_part(self) -> None:
        many = tuple(f"m-{n}" for n in range(30))
        choice = ModelChoice("openai", "base", Factory(), many)

        said = model_not_offered("other", choice)

        assert "(offered: base, m-0, m-1," in said and ", m-18 and 11 more)" in said
        assert choice.offered == ("base", *many)

    def test_the_configured_model_is_listed_once_and_first(self) -> None:
        choice = ModelChoice("openai", "base", Factory(), ("x", "base"))

        assert choice.offered == ("base", "x")


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

    async def test_a_leased_view_shares_the_pipeline_s_holdings(self) -> None:
        # What the index holds is read once per index version, whichever model a request
        # leases (a view is made per lease).
        generators, _, _ = pool()
        catalogue = FakeCatalogue({"IPC": ("420",)}, index_version="v1")
        pipeline = SynthesisPipeline(
            FakeRetriever(), RuleValidator(), generators, catalogue=catalogue
        )

        async with pipeline.lease("a") as other:
            await other._holdings("v1", None)
        await pipeline._holdings("v1", None)
        async with pipeline.lease("b") as another:
            await another._holdings("v1", None)

        assert catalogue.calls == 1

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
        generators, default_openai, factory = self.built(
            config(**env, SYNTHESIS_OPENAI_ALLOWED_MODELS="tiny-3b")
        )

        assert list(generators.configured) == ["extractive", "openai"]
        assert generators.default is EXTRACTIVE
        assert default_openai is factory.built[""]  # the configured model
        async with generators.lease("tiny-3b") as chosen:
            assert chosen["openai"] is factory.built["tiny-3b"]

    async def test_by_default_a_caller_may_name_the_configured_model_only(self) -> None:
        generators, default_openai, factory = self.built(
            config(SYNTHESIS_GENERATOR="openai", SYNTHESIS_OPENAI_MODEL="gpt-4o-mini")
        )

        async with generators.lease("gpt-4o-mini") as chosen:
            assert chosen["openai"] is default_openai
        with pytest.raises(InvalidInputError) as info:
            async with generators.lease("o1-pro"):
                pass

        assert "(offered: gpt-4o-mini)" in info.value.violations[0].description
        assert list(factory.built) == [""]

    async def test_a_star_lets_callers_name_any_model(self) -> None:
        generators, _, factory = self.built(
            config(SYNTHESIS_GENERATOR="openai", SYNTHESIS_OPENAI_ALLOWED_MODELS="*")
        )

        async with generators.lease("o1-pro") as chosen:
            assert chosen["openai"] is factory.built["o1-pro"]

    async def test_offered_openai_as_the_default(self) -> None:
        generators, default_openai, factory = self.built(
            config(SYNTHESIS_GENERATOR="openai", SYNTHESIS_OPENAI_MODEL="base-7b")
        )

        assert list(generators.configured) == ["openai", "extractive"]
        assert generators.default is default_openai
        async with generators.lease("base-7b") as chosen:
            assert chosen["openai"] is default_openai
        assert list(factory.built) == [""]

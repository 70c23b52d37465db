"""The shared Prometheus metrics: bucket bounds that cover the values the services really
produce, and grounded_build_info as each service's warm-up sets it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import REGISTRY

from services import __version__
from services.common import metrics
from services.common.metrics import (
    RETRIEVAL_TOP_SCORE,
    RPC_LATENCY,
    STAGE_SECONDS,
    set_build_info,
)
from services.retrieval import server as retrieval_server
from services.retrieval.config import RetrievalConfig
from services.retrieval.rerank import CrossEncoderReranker, HeuristicReranker
from services.retrieval.search import Searcher, SearchSettings
from services.synthesis import server as synthesis_server
from services.synthesis.config import SynthesisConfig
from services.validator import server as validator_server
from services.validator.config import ValidatorConfig
from tests.unit.retrieval.search_fakes import HashingEncoder, make_artifacts, statute_chunks

ROOT = Path(__file__).resolve().parents[3]


def bucket(name: str, labels: dict[str, str], le: float) -> float:
    """The cumulative count of ``name``'s bucket ``le`` (0 when the series does not exist)."""
    return REGISTRY.get_sample_value(f"{name}_bucket", {**labels, "le": str(float(le))}) or 0.0


def build_info() -> dict[str, dict[str, str]]:
    """Every grounded_build_info series, by service (each must be 1)."""
    found: dict[str, dict[str, str]] = {}
    for family in REGISTRY.collect():
        if family.name != "grounded_build_info":
            continue
        for sample in family.samples:
            assert sample.value == 1
            assert sample.labels["service"] not in found, "two builds of one service"
            found[sample.labels["service"]] = dict(sample.labels)
    return found


class TestBuckets:
    def test_the_rpc_latency_of_the_slowest_openai_answer_is_measurable(self) -> None:
        # SynthesizeAnswer with the OpenAI generator may wait 35 s on its dependencies (20 s
        # for the LLM): its observations must land in finite buckets that tell 25 s from 34 s,
        # not all in +Inf beside a hung call.
        slowest = SynthesisConfig.from_env({"SYNTHESIS_GENERATOR": "openai"}).slowest_answer_s
        assert slowest == 35
        labels = {"service": "test-buckets", "method": "SynthesizeAnswer"}
        RPC_LATENCY.labels(*labels.values()).observe(25.0)
        RPC_LATENCY.labels(*labels.values()).observe(slowest - 1)
        assert bucket("grounded_rpc_latency_seconds", labels, 10) == 0
        assert bucket("grounded_rpc_latency_seconds", labels, 30) == 1
        assert bucket("grounded_rpc_latency_seconds", labels, 45) == 2
        assert max(b for b in metrics.SECONDS_BUCKETS) >= slowest

    def test_the_rpc_buckets_keep_the_small_ones(self) -> None:
        # Extending the top must not coarsen the bottom (dashboards read p50s of a few ms).
        assert metrics.SECONDS_BUCKETS[:14] == (
            0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
        )  # fmt: skip
        assert metrics.SECONDS_BUCKETS[14:] == (15, 20, 30, 45, 60)

    def test_stage_buckets_reach_from_a_tenth_of_a_millisecond_to_a_minute(self) -> None:
        labels = {"service": "test-buckets", "stage": "fusion"}
        STAGE_SECONDS.labels(*labels.values()).observe(0.00008)
        STAGE_SECONDS.labels(*labels.values()).observe(0.0002)
        STAGE_SECONDS.labels(*labels.values()).observe(21.0)
        assert bucket("grounded_stage_seconds", labels, 0.0001) == 1
        assert bucket("grounded_stage_seconds", labels, 0.00025) == 2
        assert bucket("grounded_stage_seconds", labels, 20) == 2
        assert bucket("grounded_stage_seconds", labels, 30) == 3

    def test_a_named_provisions_top_score_is_measurable(self) -> None:
        # A chunk of a provision the query names scores its 0..1 score plus the section boost;
        # 1.90 was seen. It must not fall in +Inf with every other such search.
        top = 1.0 + SearchSettings().section_boost
        assert max(metrics.TOP_SCORE_BUCKETS) >= top
        before = {le: bucket("grounded_retrieval_top_score", {}, le) for le in (1.0, 1.75, 2.0)}
        RETRIEVAL_TOP_SCORE.observe(1.9)
        after = {le: bucket("grounded_retrieval_top_score", {}, le) for le in (1.0, 1.75, 2.0)}
        assert after[1.0] == before[1.0] and after[1.75] == before[1.75]
        assert after[2.0] == before[2.0] + 1

    def test_the_support_score_keeps_its_unit_buckets(self) -> None:
        # Support scores are within 0..1: the top-score extension is not theirs.
        bounds = {
            float(s.labels["le"])
            for f in REGISTRY.collect()
            if f.name == "grounded_validator_support_score"
            for s in f.samples
            if s.name.endswith("_bucket")
        }
        assert bounds == {*metrics._UNIT, float("inf")}


class TestBuildInfo:
    def test_the_version_is_pyprojects(self) -> None:
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        assert __version__ == project["version"]

    def test_an_images_revision_is_reported(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The package version does not change between builds; the image's REVISION does."""
        monkeypatch.setenv("GROUNDED_REVISION", "c1c711d")
        set_build_info("test-revision", models=["m"])
        assert build_info()["test-revision"]["revision"] == "c1c711d"

    def test_a_second_warm_up_replaces_the_series(self) -> None:
        set_build_info("test-build", models=["a", "b", "a"], index_version="v1")
        assert build_info()["test-build"] == {
            "service": "test-build",
            "version": __version__,
            "revision": "",
            "models": "a,b",
            "index_version": "v1",
        }
        set_build_info("test-build", models=["c"], index_version="v2")
        assert build_info()["test-build"]["models"] == "c"
        assert build_info()["test-build"]["index_version"] == "v2"

    async def test_retrieval_names_its_embedding_model_and_index(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        encoder = HashingEncoder()
        artifacts = make_artifacts(statute_chunks(), encoder)
        searcher = Searcher(artifacts, encoder)
        monkeypatch.setattr(retrieval_server, "build_searcher", lambda config: searcher)
        app = retrieval_server.create_app(RetrievalConfig.from_env({}))

        await app.warm_up()

        assert build_info()["retrieval"] == {
            "service": "retrieval",
            "version": __version__,
            "revision": "",
            "models": encoder.name,
            "index_version": artifacts.index_version,
        }

    def test_retrieval_names_a_rerank_model_beside_the_embedding_model(self) -> None:
        encoder = HashingEncoder()
        artifacts = make_artifacts(statute_chunks(), encoder)
        model: Any = SimpleNamespace()
        reranker = CrossEncoderReranker(model, model_name="answerability-minilm-l6-v6")
        named = Searcher(artifacts, encoder, reranker=reranker)
        assert named.model_names == (encoder.name, "answerability-minilm-l6-v6")
        assert Searcher(artifacts, encoder, reranker=HeuristicReranker()).model_names == (
            encoder.name,
        )

    async def test_synthesis_names_the_models_it_loaded(self) -> None:
        # The shipped models, loaded for real (about a second): their manifests' names.
        app = synthesis_server.create_app(
            SynthesisConfig.from_env({"SYNTHESIS_PORT": "0", "SYNTHESIS_METRICS_PORT": "0"})
        )
        try:
            await app.warm_up()
        finally:
            assert app.on_stop is not None
            await app.on_stop()
        assert build_info()["synthesis"] == {
            "service": "synthesis",
            "version": __version__,
            "revision": "",
            "models": f"{_manifest_name('answerability')},{_manifest_name('entailment')}",
            "index_version": "",
        }

    @pytest.mark.parametrize("entailment", [True, False])
    async def test_the_validator_names_its_model_or_none(self, entailment: bool) -> None:
        config = ValidatorConfig.from_env(
            {"VALIDATOR_PORT": "0", "VALIDATOR_ENTAILMENT": "on" if entailment else "off"}
        )
        app = validator_server.create_app(config)
        await app.warm_up()
        expected = _manifest_name("entailment") if entailment else ""
        assert build_info()["validator"]["models"] == expected


def _manifest_name(kind: str) -> str:
    manifest = ROOT / "models" / f"{kind}-minilm-l6" / "manifest.json"
    return str(json.loads(manifest.read_text())["name"])

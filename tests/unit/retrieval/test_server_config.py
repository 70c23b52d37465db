"""Tests for retrieval deployment config: the optional cross-encoder, the servicer deadline and
the stage times the servicer observes."""

from __future__ import annotations

import time
from typing import Any

import pytest
from grounded.retrieval.v1 import retrieval_service_pb2 as pb
from grounded.type.v1 import evidence_pb2

from services.common.config import InvalidSettingError
from services.common.errors import DeadlineExceededError
from services.retrieval import server
from services.retrieval.config import RetrievalConfig
from services.retrieval.embedding import set_torch_threads
from services.retrieval.search import (
    STAGES,
    Searcher,
    SearchRequest,
    SearchResult,
    StageSwitches,
)
from services.retrieval.servicer import MIN_REMAINING_S, RetrievalServicer
from tests.unit.retrieval.search_fakes import HashingEncoder, make_artifacts, statute_chunks


class TestCrossEncoderConfig:
    def test_cross_encoder_unset_means_heuristic_rerank(self) -> None:
        config = RetrievalConfig.from_env({})
        assert config.cross_encoder_path == ""
        settings = server.search_settings(config)
        assert settings.cross_encoder_path is None
        assert server.build_reranker(settings) is None

    def test_cross_encoder_blank_means_off(self) -> None:
        config = RetrievalConfig.from_env({"RETRIEVAL_CROSS_ENCODER_PATH": "  "})
        assert server.search_settings(config).cross_encoder_path is None

    def test_cross_encoder_path_reaches_search_settings(self) -> None:
        config = RetrievalConfig.from_env({"RETRIEVAL_CROSS_ENCODER_PATH": "/models/ce"})
        assert server.search_settings(config).cross_encoder_path == "/models/ce"

    def test_a_rerank_model_turns_the_rerank_stage_on_by_default(self) -> None:
        off = server.search_settings(RetrievalConfig.from_env({}))
        on = server.search_settings(
            RetrievalConfig.from_env(
                {"RETRIEVAL_RERANK_MODEL_DIR": "models/answerability-minilm-l6"}
            )
        )
        assert not off.default_stages.rerank and off.answerability_model_dir is None
        assert on.default_stages.rerank
        assert on.answerability_model_dir == "models/answerability-minilm-l6"
        reranker = server.build_reranker(on)
        assert reranker is not None and reranker.name == "cross-encoder"

    def test_a_rerank_model_and_a_cross_encoder_together_are_refused(self) -> None:
        config = RetrievalConfig.from_env(
            {
                "RETRIEVAL_RERANK_MODEL_DIR": "models/answerability-minilm-l6",
                "RETRIEVAL_CROSS_ENCODER_PATH": "/models/ce",
            }
        )
        with pytest.raises(ValueError, match="not both"):
            server.build_reranker(server.search_settings(config))

    def test_cross_encoder_missing_path_fails_warm_up_before_the_encoder_loads(
        self, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def no_encoder(*args: object, **kwargs: object) -> None:
            raise AssertionError("the embedding model must not load before the path is checked")

        monkeypatch.setattr(server, "load_encoder", no_encoder)
        missing = tmp_path / "cross-encoder"
        config = RetrievalConfig.from_env(
            {"RETRIEVAL_CROSS_ENCODER_PATH": str(missing), "RETRIEVAL_INDEX_DIR": str(tmp_path)}
        )
        with pytest.raises(ValueError, match="RETRIEVAL_CROSS_ENCODER_PATH") as info:
            server.build_searcher(config)
        assert str(missing) in str(info.value)


class FakeContext:
    def __init__(self, remaining: float | None) -> None:
        self.remaining = remaining

    def time_remaining(self) -> float | None:
        return self.remaining


class RecordingSearcher(Searcher):
    def __init__(self) -> None:
        encoder = HashingEncoder()
        super().__init__(make_artifacts(statute_chunks(), encoder), encoder)
        self.deadlines: list[float | None] = []

    def search(self, request: SearchRequest, *, deadline: float | None = None) -> SearchResult:
        self.deadlines.append(deadline)
        return super().search(request, deadline=deadline)


class TestServicerDeadline:
    async def test_servicer_refuses_when_too_little_time_is_left(self) -> None:
        servicer = RetrievalServicer()
        servicer.searcher = searcher = RecordingSearcher()
        context: Any = FakeContext(MIN_REMAINING_S / 2)
        with pytest.raises(DeadlineExceededError):
            await servicer.RetrievePassages(pb.RetrievePassagesRequest(query="theft"), context)
        assert searcher.deadlines == []

    async def test_servicer_passes_the_deadline_to_the_search(self) -> None:
        servicer = RetrievalServicer()
        servicer.searcher = searcher = RecordingSearcher()
        context: Any = FakeContext(5.0)
        before = time.monotonic()
        response = await servicer.RetrievePassages(
            pb.RetrievePassagesRequest(query="theft"), context
        )
        assert response.passages
        [deadline] = searcher.deadlines
        assert deadline is not None and before + 4.5 < deadline <= time.monotonic() + 5.0

    async def test_servicer_without_deadline_searches_unbounded(self) -> None:
        servicer = RetrievalServicer()
        servicer.searcher = searcher = RecordingSearcher()
        context: Any = FakeContext(None)
        await servicer.RetrievePassages(pb.RetrievePassagesRequest(query="theft"), context)
        assert searcher.deadlines == [None]

    async def test_a_rerank_skipped_for_the_deadline_is_in_the_response_and_counted(
        self,
    ) -> None:
        from prometheus_client import REGISTRY

        servicer = RetrievalServicer()
        servicer.searcher = searcher = RecordingSearcher()
        searcher._rerank_cost.ms_per_item = 10_000.0  # far more than the 5 s the caller gives
        labels = {"stage": "rerank", "reason": "deadline"}
        before = REGISTRY.get_sample_value("grounded_retrieval_stages_skipped_total", labels) or 0
        request = pb.RetrievePassagesRequest(query="theft")
        request.stages.rerank = True
        context: Any = FakeContext(5.0)
        response = await servicer.RetrievePassages(request, context)
        assert response.passages
        (rerank,) = [t for t in response.timings if t.stage == "rerank"]
        assert not rerank.ran and rerank.skip_reason == evidence_pb2.STAGE_SKIP_REASON_DEADLINE
        others = [t for t in response.timings if t.stage != "rerank"]
        assert all(t.skip_reason == evidence_pb2.STAGE_SKIP_REASON_UNSPECIFIED for t in others)
        after = REGISTRY.get_sample_value("grounded_retrieval_stages_skipped_total", labels)
        assert after == before + 1

    def test_rerank_deadline_margin_from_env(self) -> None:
        assert RetrievalConfig.from_env({}).rerank_deadline_margin_s == 0.005
        config = RetrievalConfig.from_env({"RETRIEVAL_RERANK_DEADLINE_MARGIN_S": "0.05"})
        assert server.search_settings(config).rerank_deadline_margin_s == 0.05


class TestStageMetrics:
    async def test_each_stage_that_ran_is_observed_once_with_its_time(self) -> None:
        from prometheus_client import REGISTRY

        def observed(stage: str) -> tuple[float, float]:
            labels = {"service": "retrieval", "stage": stage}
            count = REGISTRY.get_sample_value("grounded_stage_seconds_count", labels) or 0.0
            total = REGISTRY.get_sample_value("grounded_stage_seconds_sum", labels) or 0.0
            return count, total

        servicer = RetrievalServicer()
        servicer.searcher = RecordingSearcher()
        before = {stage: observed(stage) for stage in STAGES}
        request = pb.RetrievePassagesRequest(query="theft")
        request.stages.rerank = True  # off by default; expansion stays off
        context: Any = FakeContext(None)
        response = await servicer.RetrievePassages(request, context)

        ran = {t.stage: t.duration_ms for t in response.timings if t.ran}
        assert set(ran) == {"dense", "lexical", "fusion", "rerank", "aggregation"}
        for stage in STAGES:
            count, total = observed(stage)
            if stage in ran:
                assert count == before[stage][0] + 1, stage
                assert total - before[stage][1] == pytest.approx(ran[stage] / 1000, abs=1e-6)
            else:  # a stage that did not run (cache: none configured) is not observed
                assert (count, total) == before[stage], stage


class TestThreadConfig:
    def test_torch_threads_default_to_one(self) -> None:
        assert RetrievalConfig.from_env({}).torch_threads == 1

    def test_torch_threads_read_from_env(self) -> None:
        assert RetrievalConfig.from_env({"RETRIEVAL_TORCH_THREADS": "2"}).torch_threads == 2

    def test_set_torch_threads_rejects_zero(self) -> None:
        with pytest.raises(ValueError, match="threads"):
            set_torch_threads(0)


class TestDefinedTerms:
    def test_defined_terms_default_on_and_reach_the_cache_key(self) -> None:
        default = server.search_settings(RetrievalConfig.from_env({}))
        off = server.search_settings(RetrievalConfig.from_env({"RETRIEVAL_DEFINED_TERMS": "false"}))
        assert default.defined_terms and not off.defined_terms
        assert off.fingerprint() != default.fingerprint()

    def test_a_bad_value_stops_start_up_naming_it(self) -> None:
        with pytest.raises(InvalidSettingError, match="RETRIEVAL_DEFINED_TERMS"):
            RetrievalConfig.from_env({"RETRIEVAL_DEFINED_TERMS": "maybe"})


class TestFusionWeights:
    def test_fusion_weights_default_to_equal(self) -> None:
        settings = server.search_settings(RetrievalConfig.from_env({}))
        assert (settings.dense_weight, settings.lexical_weight) == (1.0, 1.0)

    def test_fusion_weights_reach_search_settings_and_the_cache_key(self) -> None:
        default = server.search_settings(RetrievalConfig.from_env({}))
        config = RetrievalConfig.from_env(
            {"RETRIEVAL_DENSE_WEIGHT": "1.5", "RETRIEVAL_LEXICAL_WEIGHT": "0.25"}
        )
        settings = server.search_settings(config)
        assert (settings.dense_weight, settings.lexical_weight) == (1.5, 0.25)
        # Cached results of one weighting are never served under another.
        assert settings.fingerprint() != default.fingerprint()

    @pytest.mark.parametrize("name", ["RETRIEVAL_DENSE_WEIGHT", "RETRIEVAL_LEXICAL_WEIGHT"])
    def test_a_negative_fusion_weight_stops_start_up_naming_it(self, name: str) -> None:
        with pytest.raises(InvalidSettingError, match=f"^{name}='-0.5': expected a number"):
            RetrievalConfig.from_env({name: "-0.5"})

    def test_lexical_weight_changes_the_fused_order(self) -> None:
        """With BM25 weighted 0, the fused order is the dense order."""
        encoder = HashingEncoder()
        artifacts = make_artifacts(statute_chunks(), encoder)
        query = "punishment for cheating property"

        def order(lexical_weight: float) -> list[str]:
            config = RetrievalConfig.from_env({"RETRIEVAL_LEXICAL_WEIGHT": str(lexical_weight)})
            searcher = Searcher(artifacts, encoder, server.search_settings(config), cache=None)
            return [c.chunk.semantic_id for c in searcher.search(SearchRequest(query, 5)).chunks]

        default = server.search_settings(RetrievalConfig.from_env({}))
        dense_only = Searcher(artifacts, encoder, default, cache=None)
        expected = [
            c.chunk.semantic_id
            for c in dense_only.search(
                SearchRequest(query, 5, stages=StageSwitches(lexical=False))
            ).chunks
        ]
        assert order(0.0) == expected
        assert order(1.0) != expected  # BM25 at full weight does reorder this query

"""One definition of SynthesizeAnswer's limits: the edge, the pipeline, the settings and the
proto comments agree, and synthesis never lets through a top_k retrieval would reject."""

from __future__ import annotations

from pathlib import Path

from services.common.config import MAX_CONCURRENT_RPCS
from services.retrieval import limits as retrieval_limits
from services.retrieval.config import RetrievalConfig
from services.synthesis import limits
from services.synthesis.config import DEFAULT_MAX_CONCURRENT_RPCS, SynthesisConfig
from services.synthesis.pipeline import PipelineSettings, SynthesisRequest

PROTO = Path(__file__).resolve().parents[3] / "protos/grounded/synthesis/v1/synthesis_service.proto"


class TestLimits:
    def test_top_k_limit_matches_retrievals(self) -> None:
        assert limits.MAX_TOP_K == retrieval_limits.MAX_TOP_K
        assert limits.DEFAULT_TOP_K == retrieval_limits.DEFAULT_TOP_K

    def test_second_hop_query_limit_matches_retrievals(self) -> None:
        assert limits.MAX_RETRIEVAL_QUERY_CHARS == retrieval_limits.MAX_QUERY_CHARS

    def test_pipeline_and_settings_defaults_come_from_the_limits(self) -> None:
        settings, config = PipelineSettings(), SynthesisConfig.from_env({})

        assert (settings.max_top_k, settings.max_question_chars) == (
            limits.MAX_TOP_K,
            limits.MAX_QUESTION_CHARS,
        )
        assert (settings.max_question_parts, settings.max_part_passages) == (
            limits.MAX_QUESTION_PARTS,
            limits.MAX_PART_PASSAGES,
        )
        assert SynthesisRequest("q").top_k == config.default_top_k == limits.DEFAULT_TOP_K
        assert settings.retrieval_timeout_s == config.retrieval_timeout_s
        assert settings.validation_timeout_s == config.validator_timeout_s

    def test_proto_comments_cite_the_limits(self) -> None:
        text = PROTO.read_text()
        assert f"1 to {limits.MAX_QUESTION_CHARS:,} characters" in text
        assert f"The most evidence passages to retrieve, 1 to {limits.MAX_TOP_K}" in text
        assert f"may ask at most {limits.MAX_QUESTION_PARTS} questions in one" in text
        assert f"parts x top_k may be at most {limits.MAX_PART_PASSAGES}" in text
        assert f"(SYNTHESIS_DEFAULT_TOP_K, {limits.DEFAULT_TOP_K} unless set)" in text
        chars = f"{limits.MAX_QUESTION_CHARS:,}"
        assert f"{chars} characters as sent and at most {chars} once normalised" in text
        assert "(NFKC, whitespace collapsed and trimmed)" in text

    def test_retrieval_takes_what_synthesis_sends_at_its_limit(self) -> None:
        """Synthesis takes 64 calls at once; each sends up to 1 + MAX_QUESTION_PARTS retrievals
        side by side and one validator call at a time. Retrieval and the validator take the
        shared default, so synthesis at its own limit never meets theirs (one replica each)."""
        synthesis = SynthesisConfig.from_env({}).server.max_concurrent_rpcs
        retrieval = RetrievalConfig.from_env({}).server.max_concurrent_rpcs

        assert synthesis == DEFAULT_MAX_CONCURRENT_RPCS == 64
        assert retrieval == MAX_CONCURRENT_RPCS >= synthesis * (1 + limits.MAX_QUESTION_PARTS)

    def test_a_question_of_the_most_parts_may_ask_for_some_evidence_each(self) -> None:
        # parts x top_k never rules out the default top_k, nor any top_k for two parts.
        assert limits.MAX_QUESTION_PARTS * limits.DEFAULT_TOP_K <= limits.MAX_PART_PASSAGES
        assert 2 * limits.MAX_TOP_K <= limits.MAX_PART_PASSAGES

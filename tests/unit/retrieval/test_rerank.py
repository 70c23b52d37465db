"""Tests for the stage-2 rerankers: heuristic features and the cross-encoder blend."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from services.common.evidence import Chunk
from services.common.language.references import SectionRef
from services.retrieval.expansion import analyse_query
from services.retrieval.rerank import (
    AnswerabilityPairScorer,
    CrossEncoderReranker,
    HeuristicReranker,
    RerankWeights,
    entities,
    features,
    load_cross_encoder,
    section_matches,
)

CHEATING = Chunk(
    semantic_id="IPC_420_1",
    doc_id="IPC_420",
    text="Such a person shall be punished with imprisonment for a term which may extend to "
    "seven years, and shall also be liable to fine.",
    title="Cheating and dishonestly inducing delivery of property",
    section="420",
    act="IPC",
)
CUSTODY = Chunk(
    semantic_id="CRPC_420_0",
    doc_id="CRPC_420",
    text="The court may make an order for the custody of property pending the trial.",
    title="Order for custody of property",
    section="420",
    act="CRPC",
)
WEATHER = Chunk(
    semantic_id="X_1_0", doc_id="X_1", text="The weather in the hills is pleasant.", title="Hills"
)


class FakePairScorer:
    """Returns fixed relevances and records the pairs it was asked about."""

    def __init__(self, relevance: list[float]) -> None:
        self.relevance = relevance
        self.pairs: list[tuple[str, str]] = []

    def predict(self, sentences: list[tuple[str, str]], *args: Any, **kwargs: Any) -> Any:
        self.pairs.extend(sentences)
        return np.asarray(self.relevance[: len(sentences)])


class TestFeatures:
    def test_section_matches_requires_act_when_named(self) -> None:
        assert section_matches(CHEATING, [SectionRef("420", "IPC")])
        assert not section_matches(CUSTODY, [SectionRef("420", "IPC")])
        assert section_matches(CUSTODY, [SectionRef("420")])
        assert not section_matches(WEATHER, [SectionRef("420")])

    def test_entities_keep_numbers_and_names_not_question_words(self) -> None:
        assert entities("What is the punishment under Section 420 of the IPC?") == {"420", "ipc"}

    def test_features_of_a_matching_chunk(self) -> None:
        analysis = analyse_query("punishment for cheating under section 420 IPC")
        f = features(analysis, CHEATING, prior=0.4)
        assert f.prior == 0.4
        assert f.section == 1.0
        assert f.intent_cue == 1.0
        assert f.entity_overlap == 1.0
        assert 0 < f.term_overlap <= 1

    def test_features_of_an_unrelated_chunk_are_zero(self) -> None:
        analysis = analyse_query("punishment for cheating under section 420 IPC")
        f = features(analysis, WEATHER, prior=2.0)
        assert f.prior == 1.0, "the prior is clipped to 0..1"
        assert (f.section, f.intent_cue, f.entity_overlap, f.term_overlap) == (0, 0, 0, 0)


class TestRerankWeights:
    def test_weights_must_sum_to_one(self) -> None:
        with pytest.raises(ValueError, match="sum to 1"):
            RerankWeights(prior=0.9)

    def test_weights_must_not_be_negative(self) -> None:
        with pytest.raises(ValueError):
            RerankWeights(prior=0.8, term_overlap=-0.05, entity_overlap=0.1, section=0.1)


class TestHeuristicReranker:
    def test_heuristic_prefers_the_named_provision_at_equal_prior(self) -> None:
        analysis = analyse_query("what is the punishment under section 420 IPC")
        scores = HeuristicReranker().score(analysis, [CUSTODY, CHEATING], [0.5, 0.5])
        assert scores[1] > scores[0]

    def test_heuristic_scores_stay_within_zero_and_one(self) -> None:
        analysis = analyse_query("punishment for cheating under section 420 IPC")
        scores = HeuristicReranker().score(analysis, [CHEATING, WEATHER], [1.0, 0.0])
        assert scores.min() >= 0.0 and scores.max() <= 1.0
        assert scores[0] > 0.5
        assert scores[1] == 0.0

    def test_heuristic_is_the_weighted_feature_sum(self) -> None:
        weights = RerankWeights(
            prior=0.0, term_overlap=0.0, entity_overlap=0.0, section=1.0, intent_cue=0.0
        )
        analysis = analyse_query("section 420 IPC")
        scores = HeuristicReranker(weights).score(analysis, [CHEATING, CUSTODY], [0.9, 0.9])
        assert scores.tolist() == [1.0, 0.0]

    def test_heuristic_prior_and_chunks_must_align(self) -> None:
        with pytest.raises(ValueError):
            HeuristicReranker().score(analyse_query("x"), [CHEATING], [0.1, 0.2])


class TestCrossEncoderReranker:
    def test_cross_encoder_blends_relevance_with_heuristic(self) -> None:
        analysis = analyse_query("punishment for cheating")
        heuristic = HeuristicReranker()
        model = FakePairScorer([0.9, 0.1])
        reranker = CrossEncoderReranker(model, weight=0.7, heuristic=heuristic)
        scores = reranker.score(analysis, [CHEATING, WEATHER], [0.3, 0.6])
        expected = 0.7 * np.array([0.9, 0.1]) + 0.3 * heuristic.score(
            analysis, [CHEATING, WEATHER], [0.3, 0.6]
        )
        np.testing.assert_allclose(scores, expected)
        assert model.pairs[0] == (analysis.query, f"{CHEATING.title}: {CHEATING.text}")

    def test_cross_encoder_relevance_is_clipped(self) -> None:
        reranker = CrossEncoderReranker(FakePairScorer([7.0, -3.0]), weight=1.0)
        scores = reranker.score(analyse_query("q"), [CHEATING, WEATHER], [0.0, 0.0])
        assert scores.tolist() == [1.0, 0.0]

    def test_cross_encoder_empty_slate_needs_no_model_call(self) -> None:
        model = FakePairScorer([])
        assert CrossEncoderReranker(model).score(analyse_query("q"), [], []).size == 0
        assert model.pairs == []

    def test_cross_encoder_weight_outside_unit_interval_is_rejected(self) -> None:
        with pytest.raises(ValueError, match=r"within 0\.\.1"):
            CrossEncoderReranker(FakePairScorer([]), weight=1.5)

    def test_load_cross_encoder_missing_directory_names_it(self, tmp_path: Any) -> None:
        missing = tmp_path / "no-such-model"
        with pytest.raises(FileNotFoundError, match="no-such-model"):
            load_cross_encoder(str(missing))


class TestAnswerabilityReranker:
    def test_the_answerability_model_scores_each_query_once_for_its_passages(self) -> None:
        calls: list[tuple[str, list[str]]] = []

        class Scorer:
            name = "answerability-test"

            def score(self, question: str, passages: Sequence[str]) -> list[float]:
                calls.append((question, list(passages)))
                return [0.9 if "cheat" in p else 0.1 for p in passages]

        pairs = AnswerabilityPairScorer(Scorer())
        out = pairs.predict([("q1", "cheating is punished"), ("q1", "rain"), ("q2", "cheat")])

        assert out == [0.9, 0.1, 0.9]
        assert calls == [("q1", ["cheating is punished", "rain"]), ("q2", ["cheat"])]

    def test_the_shipped_answerability_model_reranks_the_answering_sentence_first(self) -> None:
        from services.common.answerability_model import load_scorer

        model = Path(__file__).resolve().parents[3] / "models" / "answerability-minilm-l6"
        reranker = CrossEncoderReranker(AnswerabilityPairScorer(load_scorer(model)), weight=1.0)
        scores = reranker.score(
            analyse_query("What is the punishment for cheating?"), [WEATHER, CHEATING], [0.5, 0.5]
        )
        assert scores[1] > scores[0]

    def test_the_rerank_feeds_the_model_its_manifests_passage_format(self, tmp_path: Path) -> None:
        import json
        import shutil

        from services.retrieval import server
        from services.retrieval.config import RetrievalConfig

        model = Path(__file__).resolve().parents[3] / "models" / "answerability-minilm-l6"
        directories = {}
        for name in ("text", "statute-heading"):  # whatever the shipped model reads
            directories[name] = tmp_path / name
            shutil.copytree(model, directories[name])
            manifest = json.loads((directories[name] / "manifest.json").read_text())
            manifest["passage_format"] = name
            (directories[name] / "manifest.json").write_text(json.dumps(manifest))
        seen: dict[str, list[str]] = {}
        for name, directory in directories.items():
            config = RetrievalConfig.from_env({"RETRIEVAL_RERANK_MODEL_DIR": str(directory)})
            reranker = server.build_reranker(server.search_settings(config))
            assert isinstance(reranker, CrossEncoderReranker)
            seen[name] = [reranker._pair_text(c) for c in (CHEATING,)]
        assert seen["text"] == [CHEATING.text]
        assert seen["statute-heading"][0].startswith(f"Section {CHEATING.section}. ")

"""Metric functions on hand-computed cases, and score_run's bookkeeping."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from evaluation.metrics import (
    BootstrapConfig,
    answer_claims,
    bootstrap_ratio,
    contains_answer,
    exact_match,
    f1_score,
    latency_metric,
    ndcg,
    normalize_answer,
    ratio_metric,
    score_run,
    strip_citations,
)
from evaluation.records import Citation, EvalItem, GoldEvidence, Outcome, Status
from evaluation.stats import wilson
from services.common.refusal import REFUSAL
from services.common.validation import Verdict

A1 = "Alpha one is the first sentence of document A."
A2 = "Alpha two is the second sentence of document A."
B1 = "Beta one is the only gold sentence of document B."
NOISE = "Gamma noise sentence that supports nothing at all."

MULTI = EvalItem("m", "q?", True, gold=(GoldEvidence("A", A1), GoldEvidence("B", B1)))
UNANSWERABLE = EvalItem("u", "q?", False)
FAST = BootstrapConfig(resamples=500, seed=7)


def _answer(item_id: str, *citations: Citation, answer: str = "An answer.") -> Outcome:
    return Outcome(item_id, Status.ANSWERED, answer=answer, citations=citations)


def _refusal(item_id: str) -> Outcome:
    return Outcome.from_answer(item_id, REFUSAL)


class TestCitationMetrics:
    def test_score_run_precision_recall_invalid_and_completeness(self) -> None:
        outcome = _answer("m", Citation("A_0", A1), Citation("C_0", NOISE), Citation("Z_9", None))
        report = score_run([MULTI], [outcome], bootstrap=FAST)
        metrics = report.metrics
        assert metrics["citation_precision"].value == pytest.approx(1 / 3)
        assert metrics["citation_precision"].n == 3
        assert metrics["citation_recall"].value == pytest.approx(1 / 2)
        assert metrics["citation_recall"].n == 2
        assert metrics["invalid_citation_rate"].value == pytest.approx(1 / 3)
        assert metrics["multi_doc_completeness"].value == 0.0
        assert report.items[0].n_supporting == 1

    def test_score_run_citing_every_gold_document_is_complete(self) -> None:
        outcome = _answer("m", Citation("A_0", A1), Citation("B_0", B1))
        report = score_run([MULTI], [outcome], bootstrap=FAST)
        assert report.metrics["multi_doc_completeness"].value == 1.0
        assert report.metrics["citation_precision"].value == 1.0

    def test_score_run_splits_completeness_by_synthesis_mode(self) -> None:
        second = EvalItem("m2", "q?", True, gold=MULTI.gold)
        complete = Outcome(
            "m", Status.ANSWERED, "An answer.",
            (Citation("A_0", A1), Citation("B_0", B1)), synthesis_mode=True,
        )  # fmt: skip
        partial = Outcome("m2", Status.ANSWERED, "An answer.", (Citation("A_0", A1),))

        metrics = score_run([MULTI, second], [complete, partial], bootstrap=FAST).metrics

        assert metrics["synthesis_mode_rate"].value == 0.5
        assert metrics["multi_doc_completeness_synthesis_mode"].value == 1.0
        assert metrics["multi_doc_completeness_single_mode"].value == 0.0
        assert metrics["multi_doc_completeness"].value == 0.5

    def test_score_run_right_text_in_wrong_document_does_not_support(self) -> None:
        report = score_run([MULTI], [_answer("m", Citation("C_0", A1))], bootstrap=FAST)
        assert report.metrics["citation_precision"].value == 0.0

    def test_score_run_best_alternative_group_counts(self) -> None:
        item = EvalItem(
            "s",
            "claim",
            True,
            gold=(GoldEvidence("A", A1, 0), GoldEvidence("A", A2, 0), GoldEvidence("B", B1, 1)),
        )
        report = score_run([item], [_answer("s", Citation("B_0", B1))], bootstrap=FAST)
        assert report.metrics["citation_recall"].value == 1.0
        assert report.metrics["citation_recall"].n == 1
        assert report.metrics["multi_doc_completeness"].n == 0  # alternatives are single-doc

    def test_score_run_refusal_scores_zero_recall_and_no_precision(self) -> None:
        report = score_run([MULTI], [_refusal("m")], bootstrap=FAST)
        precision = report.metrics["citation_precision"]
        assert precision.value is None and precision.n == 0 and precision.ci_low is None
        assert report.metrics["citation_recall"].value == 0.0
        assert report.metrics["citation_recall"].n == 2
        assert report.metrics["citation_recall_answered"].n == 0


class TestRefusalMetrics:
    def test_score_run_refusal_and_error_rates(self) -> None:
        items = [
            EvalItem("u1", "q", False),
            EvalItem("u2", "q", False),
            EvalItem("a1", "q", True, gold=(GoldEvidence("A", A1),)),
            EvalItem("a2", "q", True, gold=(GoldEvidence("A", A1),)),
            EvalItem("a3", "q", True, gold=(GoldEvidence("A", A1),)),
        ]
        outcomes = [
            _refusal("u1"),
            _answer("u2", Citation("A_0", A1)),
            _refusal("a1"),
            Outcome.from_error("a2", "DEADLINE_EXCEEDED"),
            _answer("a3", Citation("A_0", A1)),
        ]
        report = score_run(items, outcomes, bootstrap=FAST)
        assert report.metrics["correct_refusal_rate"].value == pytest.approx(1 / 2)
        assert report.metrics["correct_refusal_rate"].n == 2
        assert report.metrics["false_refusal_rate"].value == pytest.approx(1 / 3)
        assert report.metrics["false_refusal_rate"].n == 3
        assert report.metrics["error_rate"].value == pytest.approx(1 / 5)
        assert report.errors == {"DEADLINE_EXCEEDED": 1}
        # Citations on an unanswerable item are not in precision; they are in the invalid rate.
        assert report.metrics["citation_precision"].n == 1
        assert report.metrics["invalid_citation_rate"].n == 2

    def test_score_run_validator_pass_rate_counts_refusal_verdicts(self) -> None:
        items = [EvalItem(i, "q", False) for i in ("x", "y", "z")]
        outcomes = [
            Outcome("x", Status.REFUSED, REFUSAL, validator_verdict=Verdict.REFUSAL),
            Outcome("y", Status.ANSWERED, "a", validator_verdict=Verdict.NOT_GROUNDED),
            Outcome("z", Status.ANSWERED, "a"),
        ]
        metric = score_run(items, outcomes, bootstrap=FAST).metrics["validator_pass_rate"]
        assert metric.value == 0.5 and metric.n == 2


class TestAnswerMetrics:
    def test_normalize_answer_official_rules(self) -> None:
        assert normalize_answer("The  Normans, an  (old) people!") == "normans old people"

    @pytest.mark.parametrize(
        ("prediction", "gold", "em", "f1"),
        [
            ("The Normans!", "normans", 1.0, 1.0),
            ("the cat sat", "cat sat on mat", 0.0, 2 / 3),
            ("dog", "cat", 0.0, 0.0),
            ("a the", "", 1.0, 1.0),
        ],
    )
    def test_exact_match_and_f1(self, prediction: str, gold: str, em: float, f1: float) -> None:
        assert exact_match(prediction, gold) == em
        assert f1_score(prediction, gold) == pytest.approx(f1)

    @pytest.mark.parametrize(
        ("prediction", "gold", "expected"),
        [
            ("It was in France [Normans_p0_0].", "France", True),
            ("Punished for thirty-three years.", "three years", False),
            ("Twenty-four hours, or a fine.", "twenty-four hours", True),
            ("without that person’s consent", "person's consent", True),
            ("Frances", "France", False),
            ("anything", "", False),
        ],
    )
    def test_contains_answer(self, prediction: str, gold: str, expected: bool) -> None:
        assert contains_answer(prediction, gold) is expected

    def test_answer_claims_drop_synthesis_headings(self) -> None:
        answer = (
            "Apollo 11, Spaceflight:\nIt landed in 1969 [Apollo 11_0].\n"
            "Neil Armstrong, Astronaut:\nHe walked first [Neil Armstrong_2]."
        )
        text = answer_claims(answer)
        assert "Spaceflight" not in text and "Astronaut" not in text
        assert "It landed in 1969" in text and "[" not in text
        # A cited sentence that ends in a colon is a claim, not a heading.
        assert "follows" in answer_claims("It reads as follows [A_1]:")

    def test_strip_citations_removes_bracketed_ids(self) -> None:
        assert strip_citations("Theft [IPC_378_0] is [x, y] bad.").split() == [
            "Theft",
            "is",
            "bad.",
        ]

    def test_score_run_em_f1_on_answered_items_only(self) -> None:
        items = [
            EvalItem("a", "q", True, gold_answers=("France",)),
            EvalItem("b", "q", True, gold_answers=("Rollo",)),
            EvalItem("c", "q", True, gold_answers=("three years", "fine"), answer_match="all"),
        ]
        outcomes = [
            _answer("a", answer="France [X_0]"),
            _refusal("b"),
            _answer("c", answer="Three years, or with fine."),
        ]
        metrics = score_run(items, outcomes, bootstrap=FAST).metrics
        assert metrics["answer_em"].value == 1.0 and metrics["answer_em"].n == 1
        assert metrics["answer_containment"].value == 1.0 and metrics["answer_containment"].n == 2


class TestRetrievalMetrics:
    def test_ndcg_hand_computed(self) -> None:
        expected = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
        assert ndcg([0.0, 1.0, 1.0], n_relevant=2) == pytest.approx(expected)
        assert ndcg([1.0, 1.0], n_relevant=2) == 1.0
        assert ndcg([], n_relevant=0) == 0.0

    def test_score_run_doc_recall_and_ndcg(self) -> None:
        outcome = Outcome(
            "m",
            Status.ANSWERED,
            "a",
            retrieved_ids=("C_0", "A_1", "A_0", "B_2"),
            retrieved_texts=(NOISE, A2, A1, B1),
        )
        metrics = score_run([MULTI], [outcome], bootstrap=FAST).metrics
        assert metrics["retrieval_doc_recall@1"].value == 0.0
        assert metrics["retrieval_doc_recall@5"].value == 1.0
        doc_ndcg = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
        assert metrics["retrieval_doc_ndcg@10"].value == pytest.approx(doc_ndcg)
        sentence_ndcg = (1 / math.log2(4) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
        assert metrics["retrieval_sentence_ndcg@10"].value == pytest.approx(sentence_ndcg)
        assert metrics["retrieval_sentence_recall@5"].value == 1.0

    def test_score_run_without_retrieval_reports_none(self) -> None:
        metrics = score_run([MULTI], [_answer("m")], bootstrap=FAST).metrics
        assert metrics["retrieval_doc_recall@10"].value is None
        assert metrics["retrieval_doc_recall@10"].n == 0


class TestBootstrap:
    def test_bootstrap_ratio_is_deterministic_for_a_seed(self) -> None:
        values = np.arange(1.0, 31.0) ** 1.5
        ones = np.ones_like(values)
        config = BootstrapConfig(resamples=1000, seed=3)
        assert bootstrap_ratio(values, ones, config) == bootstrap_ratio(values, ones, config)
        other = bootstrap_ratio(values, ones, BootstrapConfig(resamples=1000, seed=4))
        assert other != bootstrap_ratio(values, ones, config)

    def test_ratio_metric_ci_contains_point_estimate(self) -> None:
        pairs = [(float(i % 3 == 0), 1.0) for i in range(60)]
        metric = ratio_metric("x", "items", pairs, BootstrapConfig(resamples=1000, seed=1))
        assert metric.value == pytest.approx(20 / 60)
        assert metric.ci_low is not None and metric.ci_high is not None and metric.value
        assert metric.ci_low < metric.value < metric.ci_high
        assert metric.n == 60 and metric.n_items == 60

    def test_a_proportion_gets_a_wilson_interval(self) -> None:
        pairs = [(float(i % 3 == 0), 1.0) for i in range(60)]
        metric = ratio_metric("x", "items", pairs, FAST)
        assert metric.ci_method == "wilson"
        assert (metric.ci_low, metric.ci_high) == pytest.approx(wilson(20, 60))

    def test_a_proportion_at_n_of_n_is_not_a_point(self) -> None:
        # The bootstrap gave 1.000 (1.000–1.000) here; Wilson's 5/5 reaches down to 0.566.
        metric = ratio_metric("x", "items", [(1.0, 1.0)] * 5, FAST)
        assert (metric.value, metric.ci_high, metric.ci_method) == (1.0, 1.0, "wilson")
        assert metric.ci_low == pytest.approx(0.5655, abs=1e-4)

    def test_a_proportion_at_zero_is_not_a_point(self) -> None:
        metric = ratio_metric("x", "items", [(0.0, 1.0)] * 40, FAST)
        assert (metric.value, metric.ci_low, metric.ci_method) == (0.0, 0.0, "wilson")
        assert metric.ci_high == pytest.approx(0.0876, abs=1e-4)

    def test_a_ratio_that_is_zero_in_every_item_gets_wilson_over_items(self) -> None:
        # No invalid citation among 3 + 2 + 4 citations of 3 answered items (and one with none).
        pairs = [(0.0, 3.0), (0.0, 2.0), (0.0, 4.0), (0.0, 0.0)]
        metric = ratio_metric("invalid", "citations", pairs, FAST)
        assert (metric.value, metric.n, metric.ci_method) == (0.0, 9, "wilson (items)")
        assert (metric.ci_low, metric.ci_high) == pytest.approx(wilson(0, 3))

    def test_a_ratio_that_varies_keeps_the_bootstrap(self) -> None:
        pairs = [(1.0, 2.0), (2.0, 2.0), (0.0, 3.0), (1.0, 1.0)] * 5
        metric = ratio_metric("precision", "citations", pairs, FAST)
        assert metric.ci_method == "bootstrap"
        low, high = bootstrap_ratio(
            np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]), FAST
        )
        assert (metric.ci_low, metric.ci_high) == (low, high)

    def test_ratio_metric_empty_population_is_none(self) -> None:
        metric = ratio_metric("x", "items", [], FAST)
        assert (metric.value, metric.n, metric.ci_low) == (None, 0, None)

    def test_latency_metric_percentiles(self) -> None:
        values = [float(v) for v in range(1, 101)]
        assert latency_metric("p50", values, 50, FAST).value == pytest.approx(50.5)
        p95 = latency_metric("p95", values, 95, FAST)
        assert p95.value == pytest.approx(95.05)
        assert p95.ci_low is not None and p95.ci_high is not None and p95.value is not None
        assert p95.ci_low <= p95.value <= p95.ci_high


class TestScoreRun:
    def test_score_run_pairs_outcomes_by_item_id(self) -> None:
        items = [UNANSWERABLE, MULTI]
        report = score_run(items, [_answer("m"), _refusal("u")], bootstrap=FAST)
        assert [s.item_id for s in report.items] == ["u", "m"]

    @pytest.mark.parametrize(
        "outcomes",
        [[_refusal("u")], [_refusal("u"), _refusal("m"), _refusal("x")], [_refusal("u")] * 2],
    )
    def test_score_run_rejects_unpaired_outcomes(self, outcomes: list[Outcome]) -> None:
        with pytest.raises(ValueError, match="outcome"):
            score_run([UNANSWERABLE, MULTI], outcomes, bootstrap=FAST)

    def test_score_run_subsets_and_latency(self) -> None:
        items = [
            EvalItem("a", "q", False, subset="NEI"),
            EvalItem("b", "q", True, gold=(GoldEvidence("A", A1),), subset="SUPPORT"),
        ]
        outcomes = [
            Outcome.from_answer("a", REFUSAL, latency_ms={"total": 10.0}),
            Outcome.from_answer("b", "x", latency_ms={"total": 30.0, "retrieve": 5.0}),
        ]
        report = score_run(items, outcomes, bootstrap=FAST)
        assert set(report.subsets) == {"NEI", "SUPPORT"}
        assert report.subsets["NEI"]["correct_refusal_rate"].value == 1.0
        assert report.metrics["latency_total_p50_ms"].value == pytest.approx(20.0)
        assert report.metrics["latency_retrieve_p50_ms"].n == 1

    def test_report_to_dict_is_json_serialisable(self) -> None:
        report = score_run([MULTI], [_answer("m", Citation("A_0", A1))], bootstrap=FAST)
        decoded = json.loads(json.dumps(report.to_dict()))
        assert decoded["metrics"]["citation_precision"]["value"] == 1.0

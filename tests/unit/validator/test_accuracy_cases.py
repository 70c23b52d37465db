"""The accuracy benchmark's perturbations: an edit that keeps the meaning makes no reject case."""

from __future__ import annotations

import random
import zlib

import pytest

from bench.validator_accuracy import Case, remove_negation, swap_numbers


class TestPerturbations:
    def test_remove_negation_leaves_the_number_sign_of_a_ranking(self) -> None:
        text = "He achieved a career-high ranking of World No. 19"

        assert remove_negation(text) == text

    def test_remove_negation_deletes_a_real_cue(self) -> None:
        assert remove_negation("The groups did not differ") == "The groups did differ"

    def test_swap_numbers_leaves_a_day_and_year_around_a_month(self) -> None:
        text = "Tony Roche (born 17 May 1945) is a former tennis player"

        assert swap_numbers(text, random.Random(0)) == text

    def test_swap_numbers_exchanges_two_numbers(self) -> None:
        text = "From 1937 to 1945 he was imprisoned"

        assert swap_numbers(text, random.Random(0)) == "From 1945 to 1937 he was imprisoned"


class TestSplitsAndIntervals:
    def test_split_is_fixed_by_the_evidence_document_and_about_half(self) -> None:
        from bench.validator_accuracy import ACCEPT, REPORT, TUNE, Case, Chunk

        cases = [
            Case("scifact", "scifact_support_claim", "a [d_0].", [Chunk(f"{d}_0", "t")], ACCEPT)
            for d in range(400)
        ]
        splits = [c.split for c in cases]
        # Pinned: a change of the split function would move cases tuned on into the report half.
        T, R = TUNE, REPORT
        assert splits[:10] == [T, T, T, T, R, R, R, R, T, T]
        # The documented rule, computed here on its own: CRC-32 of "source:document", even: tune.
        assert splits == [
            TUNE if zlib.crc32(f"scifact:{d}".encode()) % 2 == 0 else REPORT for d in range(400)
        ]
        assert 150 <= splits.count(TUNE) <= 250
        same_doc = Case("scifact", "other_document", "b [7_1].", [Chunk("7_1", "u")], ACCEPT)
        assert same_doc.split == cases[7].split  # a document's cases share a half

    def test_wilson_interval_matches_a_known_value(self) -> None:
        from evaluation.stats import wilson

        low, high = wilson(86, 118)
        assert (round(low, 3), round(high, 3)) == (0.642, 0.801)
        assert wilson(0, 0) == (0.0, 1.0)

    def test_adversarial_cases_load_with_their_labels(self) -> None:
        from bench.validator_accuracy import ACCEPT, REJECT, adversarial_cases

        cases = list(adversarial_cases())
        assert len(cases) >= 400
        assert {c.expected for c in cases if ":paraphrase:" in c.category} == {ACCEPT}
        assert {c.expected for c in cases if ":contradiction:" in c.category} == {REJECT}
        assert all(c.answer.endswith(f"[{c.evidence[0].semantic_id}]") for c in cases)


def _claim_case(doc: int, claim: str, accepted: bool) -> Case:
    """A SciFact CONTRADICT case of ``claim`` citing document ``doc``, already validated."""
    from bench.validator_accuracy import REJECT, Chunk

    case = Case(
        "scifact", "scifact_contradict_claim", "a [x].", [Chunk(f"{doc}_0", "t")], REJECT,
        cluster=claim,
    )  # fmt: skip
    case.outcome = {"accepted": accepted, "correct": not accepted, "reason": "SUPPORTED"}
    return case


class TestClusterIntervals:
    """A claim or section with several cases is one unit: the interval over units."""

    def test_independent_cases_give_wilsons_interval(self) -> None:
        from bench.validator_accuracy import cluster_interval
        from evaluation.stats import wilson

        hits = [("", i < 12) for i in range(83)]  # no clusters: every case its own
        out = cluster_interval(hits)
        assert out["clusters"] == 83
        # Wilson's, up to the bootstrap's noise in the design effect (about 1).
        assert out["design_effect"] < 1.1
        assert out["ci95_cluster"] == pytest.approx(wilson(12, 83), abs=0.003)

    def test_clustered_cases_widen_it_and_the_draws_are_seeded(self) -> None:
        from bench.validator_accuracy import cluster_interval
        from evaluation.stats import wilson

        # 20 claims of 4 cases each, every claim all-hit or all-miss: 4 cases say one thing.
        hits = [(f"claim {c}", c < 5) for c in range(20) for _ in range(4)]
        out = cluster_interval(hits)
        low, high = out["ci95_cluster"]
        w_low, w_high = wilson(20, 80)
        assert out["clusters"] == 20 and 3.0 < out["design_effect"] < 5.0
        assert low < w_low and high > w_high
        assert cluster_interval(hits) == out  # seeded: the same every run

    def test_a_share_near_zero_keeps_a_sensible_upper_bound(self) -> None:
        from bench.validator_accuracy import cluster_interval
        from evaluation.stats import wilson

        # 2 of 83 over 43 claims: the bootstrap's percentile interval is narrower than Wilson's
        # here; the effective-sample-size interval is never narrower.
        hits = [(f"claim {i % 43}", i in (0, 50)) for i in range(83)]
        out = cluster_interval(hits)
        assert out["ci95_cluster"][1] >= wilson(2, 83)[1]
        assert out["ci95_percentile"][1] < out["ci95_cluster"][1]


class TestReportHalfFigures:
    def test_claims_with_cases_in_both_halves_are_counted_and_left_out(self) -> None:
        from bench.validator_accuracy import REPORT, TUNE, claims_in_both_halves, dataset_labelled

        tune_doc = next(d for d in range(50) if zlib.crc32(f"scifact:{d}".encode()) % 2 == 0)
        report_docs = [d for d in range(50) if zlib.crc32(f"scifact:{d}".encode()) % 2 == 1]
        cases = [
            _claim_case(tune_doc, "claim 1", False),
            _claim_case(report_docs[0], "claim 1", True),  # claim 1 in both halves
            _claim_case(report_docs[1], "claim 2", False),
            _claim_case(report_docs[2], "claim 3", True),
        ]
        assert [c.split for c in cases] == [TUNE, REPORT, REPORT, REPORT]
        shared = claims_in_both_halves(cases)
        assert shared == frozenset({"claim 1"})
        figures = dataset_labelled([c for c in cases if c.split == REPORT], shared)
        every = figures["scifact_contradict_accepted"]
        assert (every["k"], every["n"]) == (2, 3)
        own = figures["scifact_contradict_accepted_own_claims"]
        assert (own["k"], own["n"], own["cases_left_out"], own["claims_left_out"]) == (1, 2, 1, 1)

    def test_reasons_are_counted_on_the_tune_half_only(self) -> None:
        from bench.validator_accuracy import REPORT, adversarial_summary, tune_reasons

        report_doc = next(d for d in range(50) if zlib.crc32(f"scifact:{d}".encode()) % 2 == 1)
        case = _claim_case(report_doc, "claim 9", True)
        assert case.split == REPORT
        assert tune_reasons([case]) == {}
        assert "categories" not in adversarial_summary([], per_category=False)

"""The accuracy benchmark's perturbations: an edit that keeps the meaning makes no reject case."""

from __future__ import annotations

import random
import zlib

from bench.validator_accuracy import remove_negation, swap_numbers


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
        from bench.validator_accuracy import wilson

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

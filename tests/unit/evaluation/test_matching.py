"""The chunk/gold-sentence overlap rule and the id helpers."""

from __future__ import annotations

import pytest

from evaluation.golden import occurs_as_words
from evaluation.matching import normalize_ws, text_overlaps
from evaluation.records import Citation, Outcome, Status, doc_id_of
from services.common.refusal import REFUSAL

GOLD = "Whoever commits theft shall be punished with imprisonment for three years."


class TestTextOverlaps:
    @pytest.mark.parametrize(
        ("chunk", "expected"),
        [
            (GOLD, True),
            ("WHOEVER commits theft, shall be punished with imprisonment for three years", True),
            (f"Earlier sentence here. {GOLD} Later sentence here.", True),
            ("Whoever commits theft shall be punished", True),
            ("commits theft", False),
            ("Whoever commits robbery shall be punished with death.", False),
            ("Something else entirely, and at some length too. Whoever commits", False),
            ("A different ending. Whoever commits theft shall be", True),
            ("Whoever commits robbery shall be punished with imprisonment for ten years.", False),
            ("", False),
        ],
    )
    def test_text_overlaps_rule(self, chunk: str, expected: bool) -> None:
        assert text_overlaps(chunk, GOLD) is expected

    def test_text_overlaps_straddling_chunk_matches_its_larger_part(self) -> None:
        gold_a = "Alpha beta gamma delta epsilon."
        gold_b = "Zeta eta theta iota kappa lambda mu."
        chunk = "epsilon. Zeta eta theta iota kappa"
        assert text_overlaps(chunk, gold_b)
        assert not text_overlaps(chunk, gold_a)

    def test_text_overlaps_short_gold_needs_whole_gold(self) -> None:
        assert text_overlaps("A will.", "A will")
        assert not text_overlaps("will", "A will")


class TestIds:
    @pytest.mark.parametrize(
        ("semantic_id", "doc_id"),
        [
            ("IPC_420_0", "IPC_420"),
            ("IPC_498A_12", "IPC_498A"),
            ("Apollo_11_3", "Apollo_11"),
            ("x", "x"),
        ],
    )
    def test_doc_id_of_strips_sentence_index(self, semantic_id: str, doc_id: str) -> None:
        assert doc_id_of(semantic_id) == doc_id

    def test_citation_document_prefers_given_doc_id(self) -> None:
        assert Citation("IPC_420_0", "text").document == "IPC_420"
        assert Citation("weird-id", "text", doc_id="D1").document == "D1"
        assert not Citation("IPC_999_0", None).valid

    def test_normalize_ws_collapses_all_whitespace(self) -> None:
        assert normalize_ws(" a\u00a0\tb\n\nc ") == "a b c"

    def test_occurs_as_words_respects_word_bounds(self) -> None:
        assert occurs_as_words("FIR", "lodge an fir today")
        assert not occurs_as_words("FIR", "the first report")


class TestOutcome:
    def test_outcome_from_answer_classifies_exact_refusal(self) -> None:
        assert Outcome.from_answer("q1", f"  {REFUSAL}\n").status is Status.REFUSED
        assert Outcome.from_answer("q1", "Theft is punished [IPC_379_0].").status is Status.ANSWERED

    def test_outcome_from_error_keeps_message(self) -> None:
        outcome = Outcome.from_error("q1", "DEADLINE_EXCEEDED")
        assert outcome.status is Status.ERROR
        assert outcome.error == "DEADLINE_EXCEEDED"

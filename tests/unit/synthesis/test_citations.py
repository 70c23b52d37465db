"""Pipeline helpers: compact citation resolution, follow-up detection, snippets, grouping."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest

from services.common.evidence import Chunk
from services.common.language.citations import resolve_positions
from services.common.validation import (
    Reason,
    SentenceReport,
    SentenceVerdict,
    ValidationReport,
    Verdict,
)
from services.synthesis.generation import Turn
from services.synthesis.pipeline import (
    build_citations,
    snippet,
)
from services.synthesis.question import is_follow_up, previous_user_question
from tests.unit.synthesis.fakes import scored

IDS = ["IPC_120A_0", "IPC_120A_1", "IPC_120B_0", "IPC_120B_1"]


class TestResolveCompactCitations:
    @pytest.mark.parametrize(
        ("draft", "resolved"),
        [
            ("Rule [2].", "Rule [IPC_120A_1]."),
            ("Rule [1-3].", "Rule [IPC_120A_0][IPC_120A_1][IPC_120B_0]."),
            ("Rule [1–2].", "Rule [IPC_120A_0][IPC_120A_1]."),
            ("Rule [1, 4].", "Rule [IPC_120A_0][IPC_120B_1]."),
            ("Rule [IPC_120B_0, 4].", "Rule [IPC_120B_0][IPC_120B_1]."),
            ("Rule [3][4].", "Rule [IPC_120B_0][IPC_120B_1]."),
        ],
    )
    def test_resolve_positions_maps_positions_to_ids(self, draft: str, resolved: str) -> None:
        assert resolve_positions(draft, IDS) == resolved

    @pytest.mark.parametrize(
        "draft",
        [
            "Rule [IPC_120A_0].",  # already an id
            "Rule [IPC_120A_0, IPC_120B_0].",  # ids only: the validator reads this form
            "Rule [7].",  # out of range: the validator reports it
            "Rule [0].",
            "Rule [3-1].",  # descending range
            "Rule [2, Z_1_0].",  # unknown item
            "Rule [Repealed].",  # editorial bracket
        ],
    )
    def test_resolve_positions_leaves_other_brackets_as_written(self, draft: str) -> None:
        assert resolve_positions(draft, IDS) == draft

    def test_resolve_positions_treats_an_all_digit_id_as_that_id(self) -> None:
        assert resolve_positions("Claim [2].", ["9", "2"]) == "Claim [2]."


class TestFollowUp:
    @pytest.mark.parametrize(
        "question", ["What about theft?", "And for murder?", "What is its punishment?", "Why?"]
    )
    def test_is_follow_up_detects_elliptical_questions(self, question: str) -> None:
        assert is_follow_up(question)

    def test_is_follow_up_rejects_a_self_contained_question(self) -> None:
        assert not is_follow_up("What is the punishment for cheating under section 420?")

    def test_previous_user_question_reads_only_recent_turns(self) -> None:
        history = [Turn("user", "old question"), Turn("assistant", "a"), Turn("user", "recent")]

        assert previous_user_question(history, 4) == "recent"
        assert previous_user_question(history[:2], 1) is None


class TestCitations:
    def test_snippet_cuts_at_a_word_within_200_characters(self) -> None:
        text = "word " * 100

        short = snippet(text)

        assert len(short) <= 200
        assert short.endswith("word…")
        assert snippet("Short text.") == "Short text."

    def test_build_citations_groups_by_document_with_provenance(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        evidence = scored(ipc, "IPC_120B_0", "IPC_120A_0", "IPC_120B_1")
        sentences = (
            SentenceReport(
                0, "s0", SentenceVerdict.SUPPORTED, Reason.SUPPORTED, 0.9, ("IPC_120B_0",)
            ),
            SentenceReport(
                1,
                "s1",
                SentenceVerdict.SUPPORTED,
                Reason.SUPPORTED,
                0.9,
                ("IPC_120A_0", "IPC_120B_1"),
            ),
        )
        report = ValidationReport(
            Verdict.GROUNDED,
            Reason.SUPPORTED,
            0.9,
            cited_ids=("IPC_120B_0", "IPC_120A_0", "IPC_120B_1"),
            sentences=sentences,
        )

        documents = build_citations(report, evidence)

        assert [d.doc_id for d in documents] == ["IPC_120B", "IPC_120A"]
        first = documents[0].citations[0]
        assert [c.semantic_id for c in documents[0].citations] == ["IPC_120B_0", "IPC_120B_1"]
        assert first.text == ipc["IPC_120B_0"].text
        assert len(first.snippet) <= 200
        assert (first.act, first.section, first.sentence_index) == ("IPC", "120B", 0)
        assert first.url == "https://example.test/ipc/120B"
        assert first.score == pytest.approx(0.9)
        assert documents[1].citations[0].answer_sentences == (1,)
        assert first.locator == "IPC/120B#0"
        assert documents[0].chapter == ipc["IPC_120B_0"].chapter
        assert documents[0].chapter_title == ipc["IPC_120B_0"].chapter_title

    def test_build_citations_keeps_document_order_and_each_sentence_page(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # One paginated document (a PDF is one document over many pages) cited out of order:
        # its second sentence, on page 4, before its first, on page 3.
        pages = {"IPC_120B_0": 3, "IPC_120B_1": 4}
        paged = {
            i: dataclasses.replace(ipc[i], page=pages[i], extra={"path": "ipc.pdf"}) for i in pages
        }
        evidence = scored(paged, "IPC_120B_1", "IPC_120B_0")
        sentences = (
            SentenceReport(
                0, "s0", SentenceVerdict.SUPPORTED, Reason.SUPPORTED, 0.9, ("IPC_120B_1",)
            ),
            SentenceReport(
                1, "s1", SentenceVerdict.SUPPORTED, Reason.SUPPORTED, 0.9, ("IPC_120B_0",)
            ),
        )
        report = ValidationReport(
            Verdict.GROUNDED,
            Reason.SUPPORTED,
            1.0,
            cited_ids=("IPC_120B_1", "IPC_120B_0"),
            sentences=sentences,
        )

        (document,) = build_citations(report, evidence)

        assert [c.semantic_id for c in document.citations] == ["IPC_120B_0", "IPC_120B_1"]
        assert [c.page for c in document.citations] == [3, 4]
        assert [c.answer_sentences for c in document.citations] == [(1,), (0,)]
        assert (document.page, dict(document.extra)) == (3, {"path": "ipc.pdf"})

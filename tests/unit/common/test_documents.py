"""A document served whole: the doc_id rule and its text from its sentences."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.documents import (
    MAX_LIST_ACTS,
    doc_id_violations,
    document_text,
    filter_value_violations,
    list_violations,
)
from services.common.errors import IndexIntegrityError
from services.common.evidence import MAX_ID_CHARS, Chunk


def chunk(n: int, text: str, start: int, doc_id: str = "D") -> Chunk:
    return Chunk(
        semantic_id=f"{doc_id}_{n}",
        doc_id=doc_id,
        text=text,
        sentence_index=n,
        char_start=start,
        char_end=start + len(text),
    )


class TestDocIdRule:
    @pytest.mark.parametrize("doc_id", ["IPC_420", "x", "I" * MAX_ID_CHARS, " IPC_420"])
    def test_a_present_id_of_at_most_the_limit_passes(self, doc_id: str) -> None:
        assert doc_id_violations(doc_id) == []

    @pytest.mark.parametrize("doc_id", ["", "   ", "\u200b", "\n\t"])
    def test_a_blank_id_is_named(self, doc_id: str) -> None:
        (violation,) = doc_id_violations(doc_id)
        assert violation.field == "doc_id" and "must not be blank" in violation.description

    def test_a_long_id_is_named_with_its_length(self) -> None:
        (violation,) = doc_id_violations("I" * (MAX_ID_CHARS + 1), field="f")
        assert violation.field == "f"
        assert f"at most {MAX_ID_CHARS}" in violation.description
        assert f"got {MAX_ID_CHARS + 1}" in violation.description


class TestFilterValueRule:
    def test_values_of_at_most_an_id_length_pass_whatever_they_hold(self) -> None:
        assert filter_value_violations("filters.acts", ["", " ", "I" * MAX_ID_CHARS]) == []

    def test_each_longer_value_is_named_by_its_index_with_its_length(self) -> None:
        violations = filter_value_violations(
            "filters.doc_ids", ["IPC_420", "I" * (MAX_ID_CHARS + 1), "x", "y" * 1_000_000]
        )
        assert [(v.field, v.description) for v in violations] == [
            ("filters.doc_ids[1]", f"must be at most {MAX_ID_CHARS} characters (got 257)"),
            ("filters.doc_ids[3]", f"must be at most {MAX_ID_CHARS} characters (got 1,000,000)"),
        ]

    def test_list_documents_acts_follow_the_same_rule(self) -> None:
        (violation,) = list_violations(0, ["IPC", "A" * (MAX_ID_CHARS + 1)])
        assert violation.field == "acts[1]"
        # Too many acts is one violation; their lengths are not listed as well.
        (violation,) = list_violations(0, ["A" * 1000] * (MAX_LIST_ACTS + 1))
        assert violation.field == "acts"


class TestDocumentText:
    def test_sentences_sit_at_their_offsets_with_spaces_between(self) -> None:
        chunks = [chunk(1, "Second one.", 14), chunk(0, "First.", 2), chunk(2, "Third.", 27)]
        text = document_text(chunks)
        assert text == "  First.      Second one.  Third."
        for c in chunks:
            assert text[c.char_start : c.char_end] == c.text

    def test_a_sentence_may_hold_a_line_break(self) -> None:
        assert document_text([chunk(0, "One\nline.", 0), chunk(1, "Two.", 10)]) == "One\nline. Two."

    @pytest.mark.parametrize(
        "chunks",
        [
            [chunk(0, "First.", 0), chunk(1, "Overlaps.", 3)],  # starts inside the one before
            [Chunk("D_0", "D", "Short.", sentence_index=0, char_start=0, char_end=20)],
        ],
    )
    def test_offsets_that_do_not_fit_are_an_integrity_error(self, chunks: list[Chunk]) -> None:
        with pytest.raises(IndexIntegrityError, match="rebuild the index"):
            document_text(chunks)


def test_proto_comments_cite_the_doc_id_limit() -> None:
    root = Path(__file__).resolve().parents[3] / "protos/grounded"
    for proto in ("retrieval/v1/retrieval_service.proto", "synthesis/v1/synthesis_service.proto"):
        text = (root / proto).read_text()
        block = text[text.index("message GetDocumentRequest") :]
        assert f"1 to {MAX_ID_CHARS} characters" in block[: block.index("}")], proto

"""Sentence chunking: legal abbreviations, clause lines, fragments, exact offsets, fallback."""

from __future__ import annotations

import logging
import re

import pytest

from services.retrieval import chunking
from services.retrieval.chunking import (
    LegalSentenceSplitter,
    Span,
    chunk_document,
    chunk_documents,
    sentence_spans,
)
from services.retrieval.corpus import Document, load_statutes
from tests.unit.retrieval.conftest import IPC, STATUTES

ID_RE = re.compile(r"^(IPC|CRPC|CPC|IEA|NIA|IDA|MVA|HMA|COI)_[0-9]+[A-Z]*_[0-9]+$")


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in LegalSentenceSplitter().split(text)]


@pytest.fixture(scope="module")
def ipc() -> dict[str, Document]:
    return {d.doc_id: d for d in load_statutes(IPC)}


class TestLegalSentenceSplitter:
    @pytest.mark.parametrize(
        "first",
        [
            "An appeal lies under s. 28 of the Limitation Act.",
            "A fine which may extend to Rs. 500 shall be paid.",
            "The proper court, i.e. the District Court, shall hear it.",
            "Some person, e.g. a guardian, may apply on his behalf.",
            "Three things, viz. land, houses and goods, are property.",
            "The notification No. 1123 dated 18th March shall apply.",
            "The order made under cl. (a) of this section is final.",
            "Interest at six per cent. per annum is payable on it.",
            "This is governed by Sec. 12 of the Code.",
        ],
    )
    def test_split_keeps_legal_abbreviations(self, first: str) -> None:
        assert sentences(f"{first} The next sentence starts here.") == [
            first,
            "The next sentence starts here.",
        ]

    def test_split_keeps_inline_clause_references(self) -> None:
        text = (
            "A statement published in the manner specified in clause (i) of Sub-Section (2), "
            "shall be conclusive evidence. Another sentence follows."
        )
        assert len(sentences(text)) == 2

    def test_split_keeps_inline_enumeration_in_one_sentence(self) -> None:
        text = (
            "Whoever, for the purpose of exploitation, (a) recruits, (b) transports, "
            "or (c) harbours a person is guilty."
        )
        assert sentences(text) == [text]

    def test_split_joins_a_sentence_that_runs_across_lines(self) -> None:
        # s.120A: the list intro and its items are one sentence; the proviso is the next one.
        definition = (
            "When two or more persons agree to do, or cause to be done:\n"
            "an illegal act, or\n"
            "an act which is not illegal by illegal means, such an agreement is a conspiracy;"
        )
        proviso = "Provided that no agreement except an agreement to commit an offence shall."
        assert sentences(f"{definition}\n{proviso}") == [definition, proviso]

    @pytest.mark.parametrize(
        "text",
        [
            # a wrapped line: no terminal punctuation before a lower-case start
            "the school from where he is receiving instruction is situated,\nfor the issue to "
            "him of a driving licence.",
            "such an agreement shall\nif the expression means transportation, be construed.",
        ],
    )
    def test_split_joins_wrapped_lines(self, text: str) -> None:
        assert sentences(text) == [text]

    @pytest.mark.parametrize(
        "text",
        [
            # list items that are clauses of their own stay apart
            "Fact means and includes—\nany thing capable of being perceived by the senses;\n"
            "any mental condition of which any person is conscious.",
            # a finished sentence, a capital, or a clause marker starts anew
            "The first rule applies here.\nthe second rule applies there.",
            "The Court may order it, where\nThe Magistrate decides otherwise.",
            "Whoever commits the offence shall—\n(a) be fined; or\n(b) be imprisoned.",
        ],
    )
    def test_split_keeps_line_boundaries_between_clauses(self, text: str) -> None:
        assert sentences(text) == text.split("\n")

    def test_split_numbered_clauses(self) -> None:
        text = "1. The first rule applies here.\n2. The second rule applies there."
        assert sentences(text) == text.split("\n")

    def test_split_explanation_with_roman_number_stays_whole(self) -> None:
        text = "Explanation II.-- For the purposes of this section, competence is determined."
        assert sentences(text) == [text]

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("(a)\nthe first clause of the list;", ["(a)\nthe first clause of the list;"]),
            (
                "Whoever\nbeing a police officer, commits rape,",
                ["Whoever\nbeing a police officer, commits rape,"],
            ),
            (
                "Explanations\nFor the purposes of this section, it is so.",
                ["Explanations\nFor the purposes of this section, it is so."],
            ),
            (
                "1[The amended text of the proviso.\n]\nThe next provision applies.",
                ["1[The amended text of the proviso.\n]", "The next provision applies."],
            ),
            ("The only real sentence here.\n(b)", ["The only real sentence here.\n(b)"]),
            ("Repealed.", ["Repealed."]),
        ],
    )
    def test_split_merges_short_fragments(self, text: str, expected: list[str]) -> None:
        assert sentences(text) == expected

    def test_split_keeps_short_real_sentences(self) -> None:
        assert sentences("Against her will.\nWithout her consent.") == [
            "Against her will.",
            "Without her consent.",
        ]

    def test_split_real_ipc_sections(self, ipc: dict[str, Document]) -> None:
        for single in ("IPC_420", "IPC_299", "IPC_300", "IPC_378", "IPC_499"):
            assert sentences(ipc[single].text) == [ipc[single].text]
        conspiracy = sentences(ipc["IPC_120A"].text)
        assert len(conspiracy) == 2
        assert conspiracy[0].endswith("such an agreement is designated a criminal conspiracy;")
        assert conspiracy[1].startswith("Provided that")
        rape = sentences(ipc["IPC_375"].text)
        # The four clauses ending "; or" on their own lines are one sentence with its opening.
        assert rape[0].startswith("A man is said to commit “rape” if he, penetrates")
        assert rape[0].endswith("any of the following seven descriptions:")
        assert rape[1:3] == ["Against her will.", "Without her consent."]
        assert "Explanations\nFor the purposes of this section" in rape[8]
        assert all(len(s.split()) >= 2 for s in rape)

    def test_split_keeps_a_sentence_pysbd_drops(self) -> None:
        # pysbd 0.3.4 returns only the last two sentences of this HotpotQA paragraph.
        text = (
            "The Symphony No. 55 in E\u266d major, Hoboken I/55, is a symphony by Joseph Haydn, "
            "composed by 1774. It is scored for 2 oboes, bassoon, 2 horns and strings. It is in "
            "four movements:"
        )
        assert len(chunking.default_splitter()._segmenter.segment(text)) == 2
        assert sentences(text) == [
            "The Symphony No. 55 in E\u266d major, Hoboken I/55, is a symphony by Joseph Haydn, "
            "composed by 1774.",
            "It is scored for 2 oboes, bassoon, 2 horns and strings.",
            "It is in four movements:",
        ]

    @pytest.mark.parametrize(
        ("line", "spans", "expected"),
        [
            ("Aa bb. Cc dd.", [(7, 13)], [(0, 6), (7, 13)]),
            ("Aa bb. Cc dd.", [(0, 6)], [(0, 6), (7, 13)]),
            ("Aa bb. Cc dd. Ee ff.", [(0, 6), (14, 20)], [(0, 6), (7, 13), (14, 20)]),
            ("Aa bb.", [], [(0, 6)]),
            ("Aa bb.  ", [(0, 6)], [(0, 6)]),
        ],
    )
    def test_cover_fills_every_skipped_run(
        self, line: str, spans: list[Span], expected: list[Span]
    ) -> None:
        assert chunking._cover(line, spans) == expected

    def test_split_crpc_section_full_of_clauses(self) -> None:
        crpc = {d.doc_id: d for d in load_statutes(STATUTES / "crpc.json")}
        parts = sentences(crpc["CRPC_82"].text)
        assert any("in clause (i) of Sub-Section (2), shall be conclusive" in p for p in parts)
        assert any(p.startswith("(ii) the Court may also") for p in parts)


class TestChunkDocument:
    @pytest.mark.parametrize("name", ["ipc.json", "crpc.json", "constitution_of_india.json"])
    def test_chunk_offsets_map_back_exactly(self, name: str) -> None:
        docs = {d.doc_id: d for d in load_statutes(STATUTES / name)}
        chunks = chunk_documents(docs.values())
        assert len(chunks) >= len(docs)
        for c in chunks:
            assert docs[c.doc_id].text[c.char_start : c.char_end] == c.text
            assert c.text == c.text.strip() and c.text

    @pytest.mark.parametrize("name", sorted(p.name for p in STATUTES.glob("*.json")))
    def test_every_character_of_a_statute_is_in_a_chunk(self, name: str) -> None:
        # Nothing but whitespace lies outside the chunks: no text is lost from the index, and a
        # document served whole (services.common.documents.document_text) is the source's.
        docs = {d.doc_id: d for d in load_statutes(STATUTES / name)}
        covered: dict[str, list[bool]] = {d: [False] * len(docs[d].text) for d in docs}
        for c in chunk_documents(docs.values()):
            covered[c.doc_id][c.char_start : c.char_end] = [True] * (c.char_end - c.char_start)
        lost = [
            (doc_id, i)
            for doc_id, flags in covered.items()
            for i, ok in enumerate(flags)
            if not ok and not docs[doc_id].text[i].isspace()
        ]
        assert lost == []

    def test_chunk_ids_unique_and_well_formed(self) -> None:
        docs = load_statutes(IPC)
        chunks = chunk_documents(docs)
        assert len({c.semantic_id for c in chunks}) == len(chunks)
        assert all(ID_RE.match(c.semantic_id) for c in chunks)
        assert chunks[0].semantic_id == "IPC_1_0"
        by_doc: dict[str, list[int]] = {}
        for c in chunks:
            by_doc.setdefault(c.doc_id, []).append(c.sentence_index)
            assert c.semantic_id == f"{c.doc_id}_{c.sentence_index}"
        assert all(ix == list(range(len(ix))) for ix in by_doc.values())

    def test_chunk_carries_provenance(self, ipc: dict[str, Document]) -> None:
        (chunk,) = chunk_document(ipc["IPC_420"])
        assert chunk.semantic_id == "IPC_420_0"
        assert (chunk.act, chunk.section, chunk.chapter, chunk.chapter_title) == (
            "IPC",
            "420",
            "17",
            "cheating",
        )
        assert chunk.title == ipc["IPC_420"].title
        assert chunk.act_name == "Indian Penal Code, 1860"

    @pytest.mark.parametrize("context", [0, 1, 2])
    def test_chunk_context_window(self, context: int) -> None:
        doc = Document(
            doc_id="d", title="", text="One is here.\nTwo is here.\nThree is here.\nFour is here."
        )
        chunks = chunk_document(doc, context=context)
        texts = [c.text for c in chunks]
        assert [c.semantic_id for c in chunks] == ["d_0", "d_1", "d_2", "d_3"]
        for i, c in enumerate(chunks):
            assert c.context_before == " ".join(texts[max(0, i - context) : i])
            assert c.context_after == " ".join(texts[i + 1 : i + 1 + context])

    def test_chunk_negative_context_rejected(self) -> None:
        with pytest.raises(ValueError, match="context"):
            chunk_document(Document(doc_id="d", title="", text="x"), context=-1)

    def test_chunk_pages_and_metadata_from_document(self) -> None:
        doc = Document(
            doc_id="manual",
            title="Manual",
            text="Page one text.\nPage two text.",
            pages=((1, 0, 14), (2, 15, 29)),
            url="https://example.org/m",
            metadata={"path": "m.pdf"},
        )
        chunks = chunk_document(doc)
        assert [(c.semantic_id, c.page) for c in chunks] == [("manual_0", 1), ("manual_1", 2)]
        assert all(c.url == doc.url and c.extra == {"path": "m.pdf"} for c in chunks)

    def test_chunk_empty_document_has_no_chunks(self) -> None:
        assert chunk_document(Document(doc_id="d", title="", text="")) == []


class _Raising:
    def split(self, text: str) -> list[Span]:
        raise RuntimeError("boom")


class _Empty:
    def split(self, text: str) -> list[Span]:
        return []


class TestFallback:
    @pytest.mark.parametrize("splitter", [_Raising(), _Empty()])
    def test_fallback_keeps_whole_text_as_one_chunk(
        self, splitter: chunking.SentenceSplitter, caplog: pytest.LogCaptureFixture
    ) -> None:
        doc = Document(doc_id="IPC_1", title="", text="First. Second.\nThird.")
        with caplog.at_level(logging.WARNING):
            chunks = chunk_document(doc, splitter=splitter)
        assert [(c.semantic_id, c.text) for c in chunks] == [("IPC_1_0", doc.text)]
        assert any("IPC_1" in r.getMessage() for r in caplog.records)

    def test_fallback_when_pysbd_output_does_not_align(
        self, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        splitter = LegalSentenceSplitter()
        monkeypatch.setattr(splitter._segmenter, "segment", lambda text: ["not in the text."])
        with caplog.at_level(logging.WARNING):
            spans = sentence_spans("Alpha one. Beta two.", splitter)
        assert spans == [(0, 20)]
        assert "splitting failed" in caplog.text

"""Sentence chunking of Documents: pysbd plus a legal-text protection layer, exact offsets."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Final, Protocol

import pysbd

from services.common.evidence import Chunk
from services.common.language.sentences import STATUTE_ABBREVIATIONS
from services.retrieval.corpus import Document

logger = logging.getLogger(__name__)

Span = tuple[int, int]

# Bumped whenever splitting changes what chunks come out; part of the artifact checksum.
SPLITTER_VERSION: Final = "pysbd-0.3.4+legal-3"
DEFAULT_CONTEXT: Final = 1
DEFAULT_MIN_WORDS: Final = 2

_TERMINAL = ".?!;:—–-"
_CLOSING = "\"'”’)]}»"
# A piece starting like this continues the previous one ("-- For the purposes", "]", ", and").
_CONTINUATION_START = "-–—,;:)]}.*@"
_ENUM_MARKER = re.compile(r"\(\s*[A-Za-z0-9]{1,5}\s*\)|\b\d+[A-Za-z]*\.")
_WORD = re.compile(r"[^\W\d_]{2,}")
_LAST_TOKEN = re.compile(r"(\S+)\.\s*$")
# pysbd breaks at these characters, a newline, or before an inline list item ("; (b)"); a line
# with none of them inside is one sentence, which skips pysbd for most statute lines.
_MAY_BREAK = re.compile(r"[.?!…]|[;:,—–-]\s*\(")


class SentenceSplitter(Protocol):
    """Splits text into sentence spans ``(start, end)`` with ``text[start:end]`` stripped."""

    def split(self, text: str) -> list[Span]: ...


class SplitAlignmentError(RuntimeError):
    """pysbd returned a segment that is not a substring of the input at the expected place."""


class LegalSentenceSplitter:
    """pysbd segmentation corrected for statute text.

    Lines are boundaries (clauses in the source sit on their own lines) unless the next line
    continues the same sentence (see ``_continues_on_next_line``). Inside a line,
    pysbd's breaks are undone after a known abbreviation, when the left piece has no terminal
    punctuation (``in clause | (i) of``), or when the right piece starts in lower case or with
    continuation punctuation (``Explanation II. | -- For``). Pieces with fewer than
    ``min_words`` words (``(a)``, ``1A.``, ``Explanations``, ``]``) are merged into a neighbour.
    """

    def __init__(self, *, min_words: int = DEFAULT_MIN_WORDS) -> None:
        self.min_words = min_words
        self._segmenter = pysbd.Segmenter(language="en", clean=False)

    def split(self, text: str) -> list[Span]:
        spans: list[Span] = []
        for line_start, line_end in _line_spans(text):
            pieces = self._pysbd_spans(text[line_start:line_end])
            line = _join_false_breaks(text, [(line_start + s, line_start + e) for s, e in pieces])
            if spans and _continues_on_next_line(
                text[spans[-1][0] : spans[-1][1]], text[line[0][0] : line[0][1]]
            ):
                spans[-1] = (spans[-1][0], line[0][1])
                line = line[1:]
            spans.extend(line)
        return _merge_fragments(text, spans, self.min_words)

    def _pysbd_spans(self, line: str) -> list[Span]:
        if not _MAY_BREAK.search(line.rstrip(_CLOSING + ".?!…")):
            return [(0, len(line))]
        spans: list[Span] = []
        cursor = 0
        for segment in self._segmenter.segment(line):
            piece = segment.strip()
            if not piece:
                continue
            start = line.find(piece, cursor)
            if start < 0:
                raise SplitAlignmentError(f"segment {piece[:40]!r} not found after offset {cursor}")
            spans.append((start, start + len(piece)))
            cursor = start + len(piece)
        return _cover(line, spans)


def _cover(line: str, spans: list[Span]) -> list[Span]:
    """``spans`` plus every non-blank run of ``line`` they leave out, each as a span in place.

    pysbd can drop text: of "The Symphony No. 55 in E♭ major, Hoboken I/55, is a symphony by
    Joseph Haydn, composed by 1774. It is scored for ..." it returns only the later sentences.
    A sentence it skips is kept as a piece of its own (the merge steps that follow treat it
    like any other), so no text of a document is lost from the index. ``spans`` are in order
    and do not overlap, as ``_pysbd_spans`` finds them.
    """
    out: list[Span] = []
    cursor = 0
    for start, end in [*spans, (len(line), len(line))]:
        gap = line[cursor:start]
        if gap.strip():
            lead = len(gap) - len(gap.lstrip())
            out.append((cursor + lead, cursor + lead + len(gap.strip())))
        if end > start:
            out.append((start, end))
        cursor = max(cursor, end)
    return out


def _line_spans(text: str) -> list[Span]:
    spans: list[Span] = []
    start = 0
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped:
            lead = len(line) - len(line.lstrip())
            spans.append((start + lead, start + lead + len(stripped)))
        start += len(line) + 1
    return spans


def _join_false_breaks(text: str, spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for start, end in spans:
        if out and _is_false_break(text[out[-1][0] : out[-1][1]], text[start:end]):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def _is_false_break(left: str, right: str) -> bool:
    last = _LAST_TOKEN.search(left)
    if last and last.group(1).lower().lstrip("([") in STATUTE_ABBREVIATIONS:
        return True
    if left.rstrip(_CLOSING)[-1:] not in _TERMINAL:
        return True
    return right[:1].islower() or right[:1] in _CONTINUATION_START


def _continues_on_next_line(left: str, right: str) -> bool:
    """Whether a line break between ``left`` and ``right`` falls inside one sentence.

    Only a lower-case start continues (a clause marker, a capital or a number starts anew):
    after a line with no terminal punctuation (a wrapped line: ``is situated,`` | ``for the
    issue``), or after a list intro (``done:``, ``includes—``) when the next line is no clause
    of its own either (``an illegal act, or``), as in s.120A's single-sentence definition.
    """
    if not right[:1].islower():
        return False
    left_end = left.rstrip(_CLOSING)[-1:]
    if left_end not in _TERMINAL:
        return True
    return left_end in ":—–-" and right.rstrip(_CLOSING)[-1:] not in _TERMINAL


def _word_count(piece: str) -> int:
    return len(_WORD.findall(_ENUM_MARKER.sub(" ", piece)))


def _merge_fragments(text: str, spans: list[Span], min_words: int) -> list[Span]:
    """Fold pieces with too few words into the next piece (or the previous one at the end)."""
    out: list[Span] = []
    pending: int | None = None  # start of fragments waiting to be prefixed to the next piece
    for i, (start, end) in enumerate(spans):
        piece = text[start:end]
        fragment = _word_count(piece) < min_words
        is_last = i == len(spans) - 1
        if fragment and out and pending is None and piece[:1] in _CONTINUATION_START + _CLOSING:
            out[-1] = (out[-1][0], end)
            continue
        if fragment and not is_last:
            pending = start if pending is None else pending
            continue
        if fragment and out:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start if pending is None else pending, end))
        pending = None
    return out


_default_splitter: LegalSentenceSplitter | None = None


def default_splitter() -> LegalSentenceSplitter:
    """A shared splitter (building the pysbd segmenter compiles many regexes)."""
    global _default_splitter
    if _default_splitter is None:
        _default_splitter = LegalSentenceSplitter()
    return _default_splitter


def sentence_spans(
    text: str, splitter: SentenceSplitter | None = None, *, label: str = "text"
) -> list[Span]:
    """Sentence spans of ``text``; the whole (stripped) text as one span if splitting fails."""
    splitter = splitter or default_splitter()
    try:
        spans = splitter.split(text)
    except Exception:  # pysbd is a large regex machine: any failure must not stop an ingest
        logger.warning("%s: sentence splitting failed; keeping one chunk", label, exc_info=True)
        spans = []
    else:
        if not spans and text.strip():
            logger.warning("%s: sentence splitting produced nothing; keeping one chunk", label)
    if not spans and text.strip():
        lead = len(text) - len(text.lstrip())
        spans = [(lead, lead + len(text.strip()))]
    return spans


def chunk_document(
    doc: Document,
    *,
    context: int = DEFAULT_CONTEXT,
    splitter: SentenceSplitter | None = None,
) -> list[Chunk]:
    """One Chunk per sentence, ids ``<doc_id>_<n>`` (``IPC_420_0``), ±``context`` sentences."""
    if context < 0:
        raise ValueError(f"context must be >= 0, got {context}")
    spans = sentence_spans(doc.text, splitter, label=doc.doc_id)
    texts = [doc.text[s:e] for s, e in spans]
    return [
        Chunk(
            semantic_id=f"{doc.doc_id}_{n}",
            doc_id=doc.doc_id,
            text=texts[n],
            title=doc.title,
            section=doc.section,
            act=doc.act,
            act_name=doc.act_name,
            chapter=doc.chapter,
            chapter_title=doc.chapter_title,
            sentence_index=n,
            char_start=start,
            char_end=end,
            context_before=" ".join(texts[max(0, n - context) : n]),
            context_after=" ".join(texts[n + 1 : n + 1 + context]),
            page=doc.page_at(start),
            url=doc.url,
            extra=dict(doc.metadata),
        )
        for n, (start, end) in enumerate(spans)
    ]


def chunk_documents(
    docs: Iterable[Document],
    *,
    context: int = DEFAULT_CONTEXT,
    splitter: SentenceSplitter | None = None,
) -> list[Chunk]:
    """Chunks of every document, in document order."""
    return [c for doc in docs for c in chunk_document(doc, context=context, splitter=splitter)]

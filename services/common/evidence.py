"""Evidence chunk: the one domain type every service shares (a sentence of a source document)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final

# The longest id any request may carry: a chunk's semantic id or a document id (both are short:
# "IPC_420_0"). ValidateAnswer's evidence ids and GetDocument's doc_id are checked against it.
MAX_ID_CHARS: Final = 256
# The longest document id a corpus may hold: its chunks' ids, "<doc_id>_<n>", must fit
# MAX_ID_CHARS, with room for "_" and a chunk number of up to seven digits.
MAX_DOC_ID_CHARS: Final = MAX_ID_CHARS - len("_9999999")
# The longest answer ValidateAnswer reads, in UTF-8 bytes; synthesis refuses a longer draft
# itself rather than have the validator reject it as bad input.
MAX_ANSWER_BYTES: Final = 65_536


@dataclass(frozen=True, slots=True)
class Chunk:
    """One sentence of a source document, with enough provenance to trace it back.

    ``semantic_id`` is ``<ACT>_<SECTION>_<n>`` for statutes (``IPC_420_0`` is the first
    sentence of section 420); other corpora use ``<doc_id>_<n>``. Offsets are character
    offsets of ``text`` inside the document's full text (``doc_text[char_start:char_end]``).
    """

    semantic_id: str
    doc_id: str
    text: str
    title: str = ""
    section: str = ""
    act: str = ""
    act_name: str = ""
    chapter: str = ""
    chapter_title: str = ""
    sentence_index: int = 0
    char_start: int = 0
    char_end: int = 0
    context_before: str = ""
    context_after: str = ""
    page: int = 0
    url: str = ""
    extra: dict[str, str] = field(default_factory=dict)


def heading(chunk: Chunk) -> str:
    """``Section 420. Cheating`` (``Article 21A. …`` in the constitution); else the title."""
    if not chunk.section:
        return chunk.title
    label = f"{'Article' if chunk.act == 'COI' else 'Section'} {chunk.section}"
    return f"{label}. {chunk.title}" if chunk.title else label


# How a trained pair model reads an evidence chunk (its manifest's ``passage_format``):
# ``text``, the sentence alone; ``statute-heading``, a statute sentence after its heading
# (``Section 380. Theft in dwelling house, &c.: Whoever commits theft …``), other corpora's
# sentences alone. A plain-language question ("someone took my laptop from my flat") often
# shares nothing with the sentence that answers it but the offence its heading names.
PASSAGE_FORMATS = ("text", "statute-heading")


def passage_text(chunk: Chunk, passage_format: str = "text") -> str:
    """The text a pair model scores for ``chunk`` under ``passage_format``."""
    if passage_format == "statute-heading" and chunk.section:
        return f"{heading(chunk)}: {chunk.text}"
    if passage_format in PASSAGE_FORMATS:
        return chunk.text
    raise ValueError(
        f"unknown passage format {passage_format!r}; expected one of {PASSAGE_FORMATS}"
    )


@dataclass(frozen=True, slots=True)
class StageScores:
    """Per-stage scores of a retrieved chunk; a stage that did not run leaves its score None."""

    dense: float | None = None
    lexical: float | None = None
    fused: float | None = None
    rerank: float | None = None


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """A chunk returned by retrieval with its final score (higher is better) and stage scores."""

    chunk: Chunk
    score: float
    stages: StageScores = field(default_factory=StageScores)


class StageSkip(enum.Enum):
    """Why a pipeline stage a request asked for did not run (``StageSkipReason`` in the contract)."""

    DEADLINE = "deadline"  # the caller's deadline left less time than the stage usually takes
    QUERY_TOO_LONG = "query_too_long"  # the query leaves the stage's model no room for a passage

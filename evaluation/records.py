"""Plain evaluation records: what a question expects (EvalItem) and what a run did (Outcome)."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from services.common.refusal import REFUSAL
from services.common.validation import Verdict

AnswerMatch = Literal["any", "all"]

_CHUNK_SUFFIX = re.compile(r"^(?P<doc>.+)_(?P<n>\d+)$")
_WS = re.compile(r"\s+")


def doc_id_of(semantic_id: str) -> str:
    """Document id of a chunk id ``<doc_id>_<n>`` (``IPC_420_3`` -> ``IPC_420``); else the id."""
    match = _CHUNK_SUFFIX.match(semantic_id)
    return match.group("doc") if match else semantic_id


@dataclass(frozen=True, slots=True)
class GoldEvidence:
    """One gold evidence sentence: exact text from document ``doc_id``.

    ``group`` numbers alternative evidence sets: the sentences of one group are needed together,
    any one group is enough (SciFact lists several rationales per claim; most datasets have one).
    """

    doc_id: str
    text: str
    group: int = 0


@dataclass(frozen=True, slots=True)
class EvalItem:
    """One question with its expected behaviour.

    ``answer_match`` says how ``gold_answers`` are read: ``"any"`` (one reference answer must be
    contained, SQuAD/HotpotQA) or ``"all"`` (every string must be contained, the IPC golden set).
    ``subset`` names a slice reported separately (HotpotQA type, SciFact label, IPC intent).
    ``source_docs``: the documents the question was written from, where the data says so beyond
    the gold (a SQuAD question's paragraph, answerable or not; the abstracts a SciFact claim
    cites); ``sources`` falls back to the gold documents.
    """

    item_id: str
    question: str
    answerable: bool
    gold: tuple[GoldEvidence, ...] = ()
    gold_answers: tuple[str, ...] = ()
    answer_match: AnswerMatch = "any"
    subset: str = ""
    intent: str = ""
    source_docs: tuple[str, ...] = ()

    @property
    def gold_doc_ids(self) -> tuple[str, ...]:
        """Distinct gold documents in first-seen order."""
        return tuple(dict.fromkeys(g.doc_id for g in self.gold))

    @property
    def sources(self) -> tuple[str, ...]:
        """``source_docs`` and the gold documents, distinct, in first-seen order."""
        return tuple(dict.fromkeys((*self.source_docs, *self.gold_doc_ids)))

    def gold_groups(self) -> dict[int, tuple[GoldEvidence, ...]]:
        """Gold sentences by alternative group, in group order."""
        groups: dict[int, list[GoldEvidence]] = {}
        for g in self.gold:
            groups.setdefault(g.group, []).append(g)
        return {k: tuple(v) for k, v in sorted(groups.items())}


class Status(enum.Enum):
    """What the pipeline did with a question."""

    ANSWERED = "answered"
    REFUSED = "refused"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Citation:
    """One cited chunk; ``text`` is None when the id resolved to no chunk (an invalid citation)."""

    semantic_id: str
    text: str | None
    doc_id: str | None = None

    @property
    def document(self) -> str:
        """The cited chunk's document, given or derived from the semantic id."""
        return self.doc_id if self.doc_id is not None else doc_id_of(self.semantic_id)

    @property
    def valid(self) -> bool:
        """True when the citation resolved to a chunk of the corpus."""
        return self.text is not None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one pipeline run returned for one item; every field is plain data.

    ``retrieved_texts`` is optional: when given (same length and order as ``retrieved_ids``),
    sentence-level retrieval metrics are computed; otherwise only document-level ones.
    ``latency_ms`` maps a stage name (``retrieve``, ``synthesize``, ``validate``, ``total``) to
    milliseconds. An error is a scored outcome: it counts as neither an answer nor a refusal.
    """

    item_id: str
    status: Status
    answer: str = ""
    citations: tuple[Citation, ...] = ()
    retrieved_ids: tuple[str, ...] = ()
    retrieved_texts: tuple[str, ...] = ()
    latency_ms: Mapping[str, float] = field(default_factory=dict)
    validator_verdict: Verdict | None = None
    error: str | None = None
    # Why the pipeline refused (a stable code such as "INSUFFICIENT_EVIDENCE"), when it says so.
    refusal_reason: str | None = None
    # The answerability model's best score over the evidence and what it changed, when it ran.
    answerability: float | None = None
    answerability_effect: str = ""
    # Whether synthesis composed the answer in multi-document synthesis mode.
    synthesis_mode: bool = False

    @classmethod
    def from_answer(
        cls,
        item_id: str,
        answer: str,
        *,
        citations: tuple[Citation, ...] = (),
        retrieved_ids: tuple[str, ...] = (),
        retrieved_texts: tuple[str, ...] = (),
        latency_ms: Mapping[str, float] | None = None,
        validator_verdict: Verdict | None = None,
        refusal_reason: str | None = None,
        answerability: float | None = None,
        answerability_effect: str = "",
        synthesis_mode: bool = False,
    ) -> Outcome:
        """Build an outcome from answer text, classifying the exact refusal string as a refusal.

        ``refusal_reason`` is kept only when the outcome is a refusal.
        """
        refused = _WS.sub(" ", answer).strip() == REFUSAL
        return cls(
            item_id=item_id,
            status=Status.REFUSED if refused else Status.ANSWERED,
            answer=answer,
            citations=citations,
            retrieved_ids=retrieved_ids,
            retrieved_texts=retrieved_texts,
            latency_ms=dict(latency_ms or {}),
            validator_verdict=validator_verdict,
            refusal_reason=refusal_reason if refused else None,
            answerability=answerability,
            answerability_effect=answerability_effect,
            synthesis_mode=synthesis_mode,
        )

    @classmethod
    def from_error(
        cls, item_id: str, error: str, *, latency_ms: Mapping[str, float] | None = None
    ) -> Outcome:
        """An outcome for an item whose run failed; it is counted, never dropped."""
        return cls(
            item_id=item_id, status=Status.ERROR, error=error, latency_ms=dict(latency_ms or {})
        )


@dataclass(frozen=True, slots=True)
class InputFile:
    """A file a dataset was read from, with its checksum, for the report."""

    path: str
    sha256: str
    size_bytes: int


@dataclass(frozen=True, slots=True)
class RunInfo:
    """Provenance of one evaluation run: what was read, how much of it, and the command that ran."""

    dataset: str
    data_path: str
    inputs: tuple[InputFile, ...]
    corpus_checksum: str
    n_total: int
    limit: int | None
    command: str
    started_at: str
    config: Mapping[str, str] = field(default_factory=dict)
    # Whether the set was read to choose anything: "tuned", "never tuned" or "mixed" (a split
    # set: even-crc32 half tuned, odd half reported), and what exactly (evaluation/datasets.py).
    tuning: str = ""
    tuning_note: str = ""

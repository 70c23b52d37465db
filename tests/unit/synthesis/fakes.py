"""In-memory test doubles for the synthesis pipeline: retriever, honest validator, generator."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from services.common.evidence import Chunk, ScoredChunk, StageSkip
from services.common.language.references import act_name
from services.common.refusal import REFUSAL
from services.common.validation import (
    Reason,
    SentenceReport,
    SentenceVerdict,
    ValidationReport,
    Verdict,
)
from services.synthesis.generation import GenerationRequest, GenerationResult
from services.synthesis.holdings import HeldDocument, Holdings
from services.synthesis.pipeline import RetrievedEvidence
from services.validator import engine


def scored(chunks: Mapping[str, Chunk], *ids: str, top: float = 0.9) -> tuple[ScoredChunk, ...]:
    """``ids`` as retrieval results with descending scores (top, top-0.05, ...)."""
    return tuple(ScoredChunk(chunks[i], round(top - 0.05 * n, 4)) for n, i in enumerate(ids))


def chunk(semantic_id: str, text: str, *, title: str = "", act: str = "IPC") -> Chunk:
    """A statute chunk whose doc id and section follow the ``<ACT>_<SECTION>_<n>`` id."""
    act_code, section, n = semantic_id.rsplit("_", 2)
    return Chunk(
        semantic_id=semantic_id,
        doc_id=f"{act_code}_{section}",
        text=text,
        title=title,
        section=section,
        act=act,
        act_name="Indian Penal Code" if act == "IPC" else act,
        sentence_index=int(n),
    )


@dataclass
class RetrieveCall:
    """The arguments of one ``retrieve`` call."""

    query: str
    top_k: int
    acts: Sequence[str]
    doc_ids: Sequence[str]
    timeout_s: float


@dataclass
class FakeRetriever:
    """Returns scripted chunks, raises ``error``, or sleeps ``delay_s`` (ignoring its timeout)."""

    chunks: Sequence[ScoredChunk] = ()
    error: Exception | None = None
    delay_s: float = 0.0
    calls: list[RetrieveCall] = field(default_factory=list)
    # Per-query answers (chunks, or an exception to raise) that override ``chunks``/``error``.
    by_query: Mapping[str, Sequence[ScoredChunk] | Exception] = field(default_factory=dict)
    # The index version each search reports, by query ("" for any other query).
    index_versions: Mapping[str, str] = field(default_factory=dict)
    # The stages each search reports it skipped, and why.
    skipped: Mapping[str, StageSkip] = field(default_factory=dict)
    # The words each search reports no passage of the corpus holds, by query.
    unknown_terms: Mapping[str, Sequence[str]] = field(default_factory=dict)

    async def retrieve(
        self,
        query: str,
        *,
        top_k: int,
        acts: Sequence[str],
        doc_ids: Sequence[str],
        timeout_s: float,
    ) -> RetrievedEvidence:
        self.calls.append(RetrieveCall(query, top_k, acts, doc_ids, timeout_s))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        scripted = self.by_query.get(query, self.error or self.chunks)
        if isinstance(scripted, Exception):
            raise scripted
        return RetrievedEvidence(
            chunks=list(scripted)[:top_k],
            cache_hit=False,
            timings_ms={"dense": 1.5},
            index_version=self.index_versions.get(query, ""),
            skipped=self.skipped,
            unknown_terms=tuple(self.unknown_terms.get(query, ())),
        )


@dataclass
class FakeCatalogue:
    """What the index holds: the acts' sections by act code (``{"IPC": ("378", "379")}``) under
    ``index_version``, or ``error`` raised; ``calls`` counts the listings read."""

    sections: Mapping[str, Sequence[str]] = field(default_factory=dict)
    index_version: str = ""
    error: Exception | None = None
    calls: int = 0

    async def holdings(self, *, timeout_s: float) -> Holdings:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return Holdings.of(
            self.index_version,
            (
                HeldDocument(act, act_name(act), section)
                for act, numbers in self.sections.items()
                for section in numbers
            ),
        )


_CITATION = re.compile(r"\[([^\[\]]+)\]")
_WORD = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_STOP = frozenset(
    {"the", "a", "an", "and", "or", "of", "to", "in", "for", "with", "by", "be", "is", "are"}
    | {"was", "were", "shall", "may", "any", "such", "that", "this", "which", "who", "whom"}
    | {"his", "her", "its", "it", "as", "on", "at", "from", "under", "also"}
)


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


@dataclass
class ValidateCall:
    """The arguments of one ``validate`` call."""

    answer: str
    evidence_ids: tuple[str, ...]
    timeout_s: float


@dataclass
class RuleValidator:
    """An honest, simple validator: every sentence cites evidence that exists, 30 % of its
    content words appear in the cited text, and its numbers appear there too."""

    error: Exception | None = None
    calls: list[ValidateCall] = field(default_factory=list)

    async def validate(
        self, answer: str, evidence: Sequence[Chunk], *, timeout_s: float
    ) -> ValidationReport:
        self.calls.append(ValidateCall(answer, tuple(c.semantic_id for c in evidence), timeout_s))
        if self.error is not None:
            raise self.error
        if answer.strip() == REFUSAL:
            return ValidationReport(Verdict.REFUSAL, Reason.REFUSAL, 0.0)
        by_id = {c.semantic_id: c for c in evidence}
        reports: list[SentenceReport] = []
        for index, sentence in enumerate(re.split(r"(?<=[.!?])\s+(?=\S)", answer.strip())):
            ids = tuple(
                part.strip()
                for group in _CITATION.findall(sentence)
                for part in re.split(r"[,;]", group)
            )
            claim = _CITATION.sub(" ", sentence)
            invalid = tuple(i for i in ids if i not in by_id)
            cited_text = " ".join(by_id[i].text for i in ids if i in by_id)
            words = _content(claim)
            coverage = len(words & _content(cited_text)) / len(words) if words else 0.0
            if not ids:
                reason = Reason.NO_CITATION
            elif invalid:
                reason = Reason.INVALID_CITATION
            elif any(n not in cited_text for n in _NUMBER.findall(claim)):
                reason = Reason.NUMBER_MISMATCH
            elif coverage < 0.3:
                reason = Reason.LOW_COVERAGE
            else:
                reason = Reason.SUPPORTED
            verdict = (
                SentenceVerdict.SUPPORTED
                if reason is Reason.SUPPORTED
                else SentenceVerdict.UNSUPPORTED
            )
            reports.append(SentenceReport(index, sentence, verdict, reason, coverage, ids, invalid))
        failed = [r for r in reports if r.verdict is SentenceVerdict.UNSUPPORTED]
        cited = tuple(dict.fromkeys(i for r in reports for i in r.cited_ids if i in by_id))
        return ValidationReport(
            verdict=Verdict.NOT_GROUNDED if failed else Verdict.GROUNDED,
            reason=failed[0].reason if failed else Reason.SUPPORTED,
            support_score=min((r.coverage for r in reports), default=0.0),
            cited_ids=cited,
            invalid_citations=tuple(i for r in reports for i in r.invalid_ids),
            uncovered_sentences=tuple(r.index for r in failed),
            sentences=tuple(reports),
        )


@dataclass
class EngineValidator:
    """The real validator engine (``services.validator.engine.validate``) behind the pipeline's
    ``AnswerValidator`` protocol: exactly the verdict the validator service would return."""

    calls: list[ValidateCall] = field(default_factory=list)

    async def validate(
        self, answer: str, evidence: Sequence[Chunk], *, timeout_s: float
    ) -> ValidationReport:
        self.calls.append(ValidateCall(answer, tuple(c.semantic_id for c in evidence), timeout_s))
        return engine.validate(answer, evidence)


@dataclass
class ScriptedGenerator:
    """Returns ``text`` (or a function of the request), raises ``error``, or sleeps first."""

    text: str | Callable[[GenerationRequest], str] = REFUSAL
    error: Exception | None = None
    delay_s: float = 0.0
    generator_name: str = "scripted"
    requests: list[GenerationRequest] = field(default_factory=list)
    timeouts: list[float] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.generator_name

    async def generate(self, request: GenerationRequest, *, timeout_s: float) -> GenerationResult:
        self.requests.append(request)
        self.timeouts.append(timeout_s)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.error is not None:
            raise self.error
        text = self.text(request) if callable(self.text) else self.text
        return GenerationResult(text=text, generator=self.name, model="scripted-1")

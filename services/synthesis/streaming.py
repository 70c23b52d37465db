"""StreamAnswer: the pipeline's answer as events, each sentence sent once the validator passed it.

    prepare ──► EvidenceEvent ──► insufficient? ──► FinishedEvent(refusal)
                                      │
    incremental generator (OpenAI SSE): every sentence the draft completes is validated on its
    own (the validator's sentence-level checks) and sent as a SentenceEvent at once, while the
    draft goes on; a sentence that fails stops the generation: FinishedEvent(refusal, retract).
    any other generator (extractive): the finished draft is validated whole, then its sentences
    are sent (none when it was rejected).
                                      │
    the whole draft ──► ValidateAnswer (whole-answer rules: every used passage cited ...)
                    ──► FinishedEvent(result, retract = sentences were sent but not delivered)

The final event's result is what ``SynthesisPipeline.answer`` returns for the request. When it
is a refusal after sentences were sent, or the sentences sent are not the delivered answer's,
``retract`` is true: the client must withdraw what it showed. Cancelling the stream (the
client went away) cancels the generation and any validator call in flight at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from services.common.evidence import ScoredChunk, StageSkip
from services.common.intent import Intent
from services.common.language.citations import EvidenceIndex, resolve_positions, scan
from services.common.language.sentences import is_lead_in, split_sentences
from services.common.validation import SentenceVerdict, ValidationReport
from services.synthesis.generation import IncrementalGenerator
from services.synthesis.pipeline import (
    Citation,
    Prepared,
    SynthesisPipeline,
    SynthesisRequest,
    SynthesisResult,
    SynthesisStatus,
    build_citations,
    is_refusal,
    verdict,
)
from services.synthesis.sufficiency import SufficiencyDecision

_PASSING = (SentenceVerdict.SUPPORTED, SentenceVerdict.EXEMPT)


@dataclass(frozen=True, slots=True)
class EvidenceEvent:
    """The evidence the answer will be drafted from, and the sufficiency decision on it."""

    evidence: tuple[ScoredChunk, ...]
    sufficiency: SufficiencyDecision
    intent: Intent
    timings_ms: dict[str, float]
    skipped_stages: dict[str, StageSkip] = field(default_factory=dict)
    # Whether the input was read as a statement (a claim to check), not a question.
    statement: bool = False


@dataclass(frozen=True, slots=True)
class SentenceEvent:
    """One answer sentence that passed the validator's sentence-level checks."""

    index: int
    text: str
    citations: tuple[Citation, ...]


@dataclass(frozen=True, slots=True)
class FinishedEvent:
    """The whole-answer result; ``retract``: withdraw the sentences sent."""

    result: SynthesisResult
    retract: bool
    sentences_sent: int


StreamEvent = EvidenceEvent | SentenceEvent | FinishedEvent


async def stream_answer(
    pipeline: SynthesisPipeline, request: SynthesisRequest, *, deadline: float | None = None
) -> AsyncIterator[StreamEvent]:
    """The events of one request (see the module docstring); errors propagate as in ``answer``."""
    prepared = await pipeline.prepare(request, deadline)
    base = prepared.base
    yield EvidenceEvent(
        base.evidence,
        base.sufficiency,
        base.intent,
        dict(base.timings),
        dict(base.skipped),
        statement=base.statement,
    )
    if prepared.refusal is not None:
        yield FinishedEvent(prepared.refusal, False, 0)
        return
    if isinstance(prepared.generator, IncrementalGenerator):
        async for event in _incremental(pipeline, prepared, deadline):
            yield event
        return
    drafted = await pipeline.draft(prepared, deadline)
    if isinstance(drafted, SynthesisResult):
        yield FinishedEvent(drafted, False, 0)
        return
    report = await pipeline.validate(drafted, base.evidence, deadline, prepared.timings)
    result = verdict(base, drafted, report)
    sent = 0
    if result.answered:
        for sentence in report.sentences:
            yield SentenceEvent(
                sent, sentence.text, _citations(report, sentence.index, sent, base.evidence)
            )
            sent += 1
    yield FinishedEvent(result, False, sent)


async def _incremental(
    pipeline: SynthesisPipeline, prepared: Prepared, deadline: float | None
) -> AsyncIterator[StreamEvent]:
    base = prepared.base
    ids = prepared.evidence_ids
    texts = [s.chunk.text for s in base.evidence]
    index = EvidenceIndex.of(ids, texts)
    pieces: asyncio.Queue[str | None] = asyncio.Queue()
    drafting = asyncio.ensure_future(pipeline.draft(prepared, deadline, pieces.put_nowait))
    drafting.add_done_callback(lambda _: pieces.put_nowait(None))
    buffer = ""
    taken = 0  # characters of ``buffer`` already sent as sentences
    sent: list[str] = []
    try:
        done = False
        while not done:
            piece = await pieces.get()
            if piece is None:
                done = True
                if _failed(drafting):
                    # The draft failed or was refused (a broken stream, a timeout): its outcome
                    # decides, not the partial text left in the buffer.
                    break
            else:
                buffer += piece
            complete = _complete_sentences(buffer, taken, index, final=done)
            for text, end in _groups(buffer, complete, final=done):
                taken = end
                if is_refusal(text):
                    # Not an answer sentence: the whole draft decides (declined, or refused as
                    # a refusal among claims).
                    continue
                resolved = resolve_positions(text, ids, texts)
                report = await pipeline.validate(
                    resolved, base.evidence, deadline, {}, stage="validation.sentence"
                )
                if not _passes(report):
                    drafting.cancel()
                    failed = next((s for s in report.sentences if s.verdict not in _PASSING), None)
                    refusal = base.refuse(
                        SynthesisStatus.REFUSED_VALIDATION_FAILED,
                        "VALIDATION_FAILED",
                        f"answer sentence {len(sent)} failed validation: "
                        f"{failed.reason.value if failed else report.reason.value}",
                        report,
                    )
                    yield FinishedEvent(refusal, bool(sent), len(sent))
                    return
                for k, sentence in enumerate(report.sentences):
                    yield SentenceEvent(
                        len(sent), sentence.text, _citations(report, k, len(sent), base.evidence)
                    )
                    sent.append(sentence.text)
        drafted = drafting.result()
        if isinstance(drafted, SynthesisResult):
            yield FinishedEvent(drafted, bool(sent), len(sent))
            return
        report = await pipeline.validate(drafted, base.evidence, deadline, prepared.timings)
        result = verdict(base, drafted, report)
        delivered = [s.text for s in report.sentences]
        same = [_flat(s) for s in sent] == [_flat(s) for s in delivered[: len(sent)]]
        yield FinishedEvent(result, bool(sent) and not (result.answered and same), len(sent))
    finally:
        # Stop the generation if it is still running (a rejected sentence, the client gone)
        # and read its outcome, so that no failure is left to be logged as never retrieved.
        drafting.cancel()
        await asyncio.wait([drafting])
        if not drafting.cancelled():
            drafting.exception()


def _complete_sentences(
    buffer: str, taken: int, index: EvidenceIndex, *, final: bool
) -> list[tuple[str, int, int]]:
    """The sentences of ``buffer[taken:]`` that are complete, with the offsets each starts and
    ends at.

    Split as the validator splits an answer: its citation tokens never split and stick to the
    sentence before them. A sentence is complete when another one has begun after it (or the
    draft has ended). Text from an unclosed "[" on is not looked at yet: a citation still
    arriving belongs to the sentence before it.
    """
    end = len(buffer)
    if not final:
        opened = buffer.rfind("[", taken)
        if opened >= 0 and buffer.find("]", opened) < 0:
            end = opened
    window = buffer[taken:end]
    spans = split_sentences(window, [(c.start, c.end) for c in scan(window, index)])
    if not final:
        spans = spans[:-1]
    return [(window[s:e], taken + s, taken + e) for s, e in spans]


def _groups(
    buffer: str, complete: list[tuple[str, int, int]], *, final: bool
) -> list[tuple[str, int]]:
    """The texts to validate one at a time, each with the offset it ends at: every sentence
    alone, except that a lead-in ("... as follows:") goes with the sentence it introduces, as
    written (the validator then splits them as in the whole answer, where a lead-in is exempt
    unless it is last). A lead-in whose next sentence has not arrived waits (it is not
    consumed); at the draft's end it is validated alone, as the answer's last sentence.
    """
    out: list[tuple[str, int]] = []
    lead: int | None = None  # where a waiting lead-in starts
    for text, start, end in complete:
        if is_lead_in(text) and not is_refusal(text):
            lead = start if lead is None else lead
            continue
        out.append((buffer[lead:end] if lead is not None else text, end))
        lead = None
    if lead is not None and final:
        out.append((buffer[lead : complete[-1][2]], complete[-1][2]))
    return out


def _passes(report: ValidationReport) -> bool:
    return bool(report.sentences) and all(s.verdict in _PASSING for s in report.sentences)


def _citations(
    report: ValidationReport, sentence: int, index: int, evidence: Sequence[ScoredChunk]
) -> tuple[Citation, ...]:
    """The citations of the report's sentence ``sentence``, numbered as answer sentence ``index``."""
    cited = set(report.sentences[sentence].cited_ids)
    return tuple(
        replace(c, answer_sentences=(index,))
        for doc in build_citations(report, evidence)
        for c in doc.citations
        if c.semantic_id in cited
    )


def _flat(text: str) -> str:
    return " ".join(text.split())


def _failed(drafting: asyncio.Future[Any]) -> bool:
    """True when the finished draft raised or came back as a refusal instead of a draft."""
    if drafting.cancelled():
        return False
    return drafting.exception() is not None or isinstance(drafting.result(), SynthesisResult)

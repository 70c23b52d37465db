"""Adapters between the shared proto types (grounded.type.v1) and the domain evidence types."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from grounded.type.v1 import evidence_pb2

from services.common.documents import document_text
from services.common.evidence import Chunk, ScoredChunk, StageScores, StageSkip
from services.common.intent import Intent
from services.common.language.acts import act_caveat

INTENT_TO_PROTO: Mapping[Intent, evidence_pb2.QueryIntent] = {
    Intent.DEFINITION: evidence_pb2.QUERY_INTENT_DEFINITION,
    Intent.PUNISHMENT: evidence_pb2.QUERY_INTENT_PUNISHMENT,
    Intent.PROCEDURE: evidence_pb2.QUERY_INTENT_PROCEDURE,
    Intent.SCOPE: evidence_pb2.QUERY_INTENT_SCOPE,
    Intent.GENERAL: evidence_pb2.QUERY_INTENT_GENERAL,
}
INTENT_FROM_PROTO = {v: k for k, v in INTENT_TO_PROTO.items()}


def chunk_to_proto(chunk: Chunk, scored: ScoredChunk | None = None) -> evidence_pb2.Passage:
    passage = evidence_pb2.Passage(
        semantic_id=chunk.semantic_id,
        doc_id=chunk.doc_id,
        title=chunk.title,
        section=chunk.section,
        text=chunk.text,
        sentence_index=chunk.sentence_index,
        char_start=chunk.char_start,
        char_end=chunk.char_end,
        context_before=chunk.context_before,
        context_after=chunk.context_after,
        source=evidence_pb2.SourceMetadata(
            act=chunk.act,
            act_name=chunk.act_name,
            chapter=chunk.chapter,
            chapter_title=chunk.chapter_title,
            page=chunk.page,
            url=chunk.url,
            extras=chunk.extra,
        ),
    )
    if scored is not None:
        scores = passage.scores
        scores.final_score = scored.score
        for name in ("dense", "lexical", "fused", "rerank"):
            value = getattr(scored.stages, name)
            if value is not None:
                setattr(scores, name, value)
    return passage


def document_to_proto(chunks: Sequence[Chunk], *, whole: bool = True) -> evidence_pb2.Document:
    """A document from its chunks (sentence order): its provenance as its first passage carries
    it, its passage count and, ``whole``, its text and passages (ListDocuments leaves them out)."""
    ordered = sorted(chunks, key=lambda c: c.sentence_index)
    first = chunk_to_proto(ordered[0])
    document = evidence_pb2.Document(
        doc_id=first.doc_id,
        title=first.title,
        section=first.section,
        source=first.source,
        passage_count=len(ordered),
    )
    if whole:
        # Where a reader reads a document whole (GetDocument), what to know about its act's text;
        # not on each searched passage or listed document (the same words, many times over).
        document.source.caveat = act_caveat(ordered[0].act)
        document.text = document_text(ordered)
        for chunk in ordered:
            # A passage's neighbours are in the text beside it: sent once, not twice more.
            passage = document.passages.add()
            passage.CopyFrom(chunk_to_proto(chunk))
            passage.ClearField("context_before")
            passage.ClearField("context_after")
    return document


def scored_to_proto(scored: ScoredChunk) -> evidence_pb2.Passage:
    return chunk_to_proto(scored.chunk, scored)


def chunk_from_proto(passage: evidence_pb2.Passage) -> Chunk:
    source = passage.source
    return Chunk(
        semantic_id=passage.semantic_id,
        doc_id=passage.doc_id,
        text=passage.text,
        title=passage.title,
        section=passage.section,
        act=source.act,
        act_name=source.act_name,
        chapter=source.chapter,
        chapter_title=source.chapter_title,
        sentence_index=passage.sentence_index,
        char_start=passage.char_start,
        char_end=passage.char_end,
        context_before=passage.context_before,
        context_after=passage.context_after,
        page=source.page,
        url=source.url,
        extra=dict(source.extras),
    )


def scored_from_proto(passage: evidence_pb2.Passage) -> ScoredChunk:
    scores = passage.scores
    stages = StageScores(
        dense=scores.dense if scores.HasField("dense") else None,
        lexical=scores.lexical if scores.HasField("lexical") else None,
        fused=scores.fused if scores.HasField("fused") else None,
        rerank=scores.rerank if scores.HasField("rerank") else None,
    )
    return ScoredChunk(chunk=chunk_from_proto(passage), score=scores.final_score, stages=stages)


SKIP_TO_PROTO: Mapping[StageSkip, evidence_pb2.StageSkipReason] = {
    StageSkip.DEADLINE: evidence_pb2.STAGE_SKIP_REASON_DEADLINE,
    StageSkip.QUERY_TOO_LONG: evidence_pb2.STAGE_SKIP_REASON_QUERY_TOO_LONG,
}
SKIP_FROM_PROTO: Mapping[int, StageSkip] = {v: k for k, v in SKIP_TO_PROTO.items()}


def timings_to_proto(
    timings: Iterable[tuple[str, bool, float]], skipped: Mapping[str, StageSkip] | None = None
) -> list[evidence_pb2.StageTiming]:
    """Stage timings; ``skipped`` names the requested stages that did not run, and why."""
    skipped = skipped or {}
    return [
        evidence_pb2.StageTiming(
            stage=s,
            ran=r,
            duration_ms=d,
            skip_reason=SKIP_TO_PROTO[skipped[s]]
            if s in skipped
            else evidence_pb2.STAGE_SKIP_REASON_UNSPECIFIED,
        )
        for s, r, d in timings
    ]

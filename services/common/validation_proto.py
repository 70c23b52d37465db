"""The validation report ⇄ ``grounded.type.v1.ValidationReport``, both ways.

One conversion for the service that produces the verdict and the one that consumes it, so
neither imports the other (issue 14). ``ValidateAnswerResponse`` has the same fields as
``ValidationReport`` (tests/unit/common/test_contracts.py keeps them identical), so the
validator sends this message's bytes as its response and synthesis reads the response's bytes
as this message.
"""

from __future__ import annotations

from typing import cast

from grounded.type.v1 import validation_pb2 as tpb

from services.common import validation as r
from services.common.judge import Outcome

_VERDICT = {
    r.Verdict.GROUNDED: tpb.VALIDATION_VERDICT_GROUNDED,
    r.Verdict.REFUSAL: tpb.VALIDATION_VERDICT_REFUSAL,
    r.Verdict.NOT_GROUNDED: tpb.VALIDATION_VERDICT_NOT_GROUNDED,
}
_SENTENCE_VERDICT = {
    r.SentenceVerdict.SUPPORTED: tpb.SENTENCE_VERDICT_SUPPORTED,
    r.SentenceVerdict.EXEMPT: tpb.SENTENCE_VERDICT_EXEMPT,
    r.SentenceVerdict.UNSUPPORTED: tpb.SENTENCE_VERDICT_UNSUPPORTED,
}
_REASON: dict[r.Reason, tpb.ValidationReason] = {
    # The generated stubs type Value() as int; the enum constants are ints at runtime too.
    reason: cast(
        tpb.ValidationReason,
        tpb.ValidationReason.Value(f"VALIDATION_REASON_{reason.value}"),
    )
    for reason in r.Reason
}
_TIER: dict[r.Tier, tpb.ValidationTier] = {
    tier: cast(
        tpb.ValidationTier,
        tpb.ValidationTier.Value(f"VALIDATION_TIER_{tier.name}"),
    )
    for tier in r.Tier
}
_JUDGE_OUTCOME: dict[str, tpb.JudgeOutcome] = {
    outcome.value: cast(tpb.JudgeOutcome, tpb.JudgeOutcome.Value(f"JUDGE_OUTCOME_{outcome.name}"))
    for outcome in Outcome
}
JUDGE_OUTCOME_FROM_PROTO = {v: k for k, v in _JUDGE_OUTCOME.items()}
VERDICT_FROM_PROTO = {v: k for k, v in _VERDICT.items()}
TIER_FROM_PROTO = {v: k for k, v in _TIER.items()}
SENTENCE_VERDICT_FROM_PROTO = {v: k for k, v in _SENTENCE_VERDICT.items()}
REASON_FROM_PROTO = {v: k for k, v in _REASON.items()}


def report_to_proto(report: r.ValidationReport) -> tpb.ValidationReport:
    return tpb.ValidationReport(
        verdict=_VERDICT[report.verdict],
        reason=_REASON[report.reason],
        support_score=report.support_score,
        cited_ids=report.cited_ids,
        invalid_citations=report.invalid_citations,
        malformed_citations=[
            tpb.MalformedCitation(
                token=m.token, char_start=m.char_start, char_end=m.char_end, problem=m.problem
            )
            for m in report.malformed_citations
        ],
        missing_citations=report.missing_citations,
        uncovered_sentences=report.uncovered_sentences,
        sentences=[
            tpb.SentenceReport(
                index=s.index,
                text=s.text,
                verdict=_SENTENCE_VERDICT[s.verdict],
                reason=_REASON[s.reason],
                coverage=s.coverage,
                cited_ids=s.cited_ids,
                invalid_ids=s.invalid_ids,
                missing_ids=s.missing_ids,
                spans=[
                    tpb.SupportSpan(
                        semantic_id=sp.semantic_id, char_start=sp.char_start, char_end=sp.char_end
                    )
                    for sp in s.spans
                ],
                detail=s.detail,
                entailment=_scores_to_proto(s.entailment),
                decided_by=_TIER[s.decided_by] if s.decided_by else tpb.VALIDATION_TIER_UNSPECIFIED,
                judge=_judge_to_proto(s.judge),
                failed_reasons=[_REASON[f] for f in s.failed],
            )
            for s in report.sentences
        ],
        tiers=[_TIER[t] for t in report.tiers],
        entailment_model=report.entailment_model,
        judge_model=report.judge_model,
        detail=report.detail,
    )


def _judge_to_proto(j: r.JudgeDecision | None) -> tpb.JudgeDecision | None:
    if j is None:
        return None
    return tpb.JudgeDecision(
        model=j.model,
        outcome=_JUDGE_OUTCOME.get(j.outcome, tpb.JUDGE_OUTCOME_UNSPECIFIED),
        score=j.score,
        cached=j.cached,
        local_score=j.local_score,
    )


def _judge_from_proto(s: tpb.SentenceReport) -> r.JudgeDecision | None:
    if not s.HasField("judge"):
        return None
    j = s.judge
    return r.JudgeDecision(
        model=j.model,
        outcome=JUDGE_OUTCOME_FROM_PROTO.get(j.outcome, "unavailable"),
        score=j.score if j.HasField("score") else None,
        cached=j.cached,
        local_score=j.local_score if j.HasField("local_score") else None,
    )


def _scores_to_proto(e: r.EntailmentScores | None) -> tpb.EntailmentScores | None:
    if e is None:
        return None
    return tpb.EntailmentScores(
        entailment=e.entailment,
        neutral=e.neutral,
        contradiction=e.contradiction,
        semantic_id=e.semantic_id,
        char_start=e.char_start,
        char_end=e.char_end,
        windows=e.windows,
        split=e.split,
        verbatim=e.verbatim,
    )


def _scores_from_proto(s: tpb.SentenceReport) -> r.EntailmentScores | None:
    if not s.HasField("entailment"):
        return None
    e = s.entailment
    return r.EntailmentScores(
        e.entailment,
        e.neutral,
        e.contradiction,
        e.semantic_id,
        e.char_start,
        e.char_end,
        e.windows,
        e.split,
        e.verbatim,
    )


def report_from_proto(response: tpb.ValidationReport) -> r.ValidationReport:
    """Used by clients (synthesis) to read a verdict back into the domain type."""
    return r.ValidationReport(
        verdict=VERDICT_FROM_PROTO.get(response.verdict, r.Verdict.NOT_GROUNDED),
        reason=REASON_FROM_PROTO.get(response.reason, r.Reason.EMPTY_ANSWER),
        support_score=response.support_score,
        cited_ids=tuple(response.cited_ids),
        invalid_citations=tuple(response.invalid_citations),
        malformed_citations=tuple(
            r.MalformedCitation(m.token, m.char_start, m.char_end, m.problem)
            for m in response.malformed_citations
        ),
        missing_citations=tuple(response.missing_citations),
        uncovered_sentences=tuple(response.uncovered_sentences),
        sentences=tuple(
            r.SentenceReport(
                index=s.index,
                text=s.text,
                verdict=SENTENCE_VERDICT_FROM_PROTO.get(s.verdict, r.SentenceVerdict.UNSUPPORTED),
                reason=REASON_FROM_PROTO.get(s.reason, r.Reason.LOW_COVERAGE),
                coverage=s.coverage,
                cited_ids=tuple(s.cited_ids),
                invalid_ids=tuple(s.invalid_ids),
                missing_ids=tuple(s.missing_ids),
                spans=tuple(
                    r.SupportSpan(sp.semantic_id, sp.char_start, sp.char_end) for sp in s.spans
                ),
                detail=s.detail,
                entailment=_scores_from_proto(s),
                decided_by=TIER_FROM_PROTO.get(s.decided_by),
                judge=_judge_from_proto(s),
                failed=tuple(
                    REASON_FROM_PROTO[f] for f in s.failed_reasons if f in REASON_FROM_PROTO
                ),
            )
            for s in response.sentences
        ),
        tiers=tuple(TIER_FROM_PROTO[t] for t in response.tiers if t in TIER_FROM_PROTO),
        entailment_model=response.entailment_model,
        judge_model=response.judge_model,
        detail=response.detail,
    )

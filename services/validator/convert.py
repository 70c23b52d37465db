"""Validator proto ⇄ domain conversion, with request-limit checks that raise field violations."""

from __future__ import annotations

from typing import NamedTuple, cast

from grounded.validator.v1 import validator_service_pb2 as pb

from services.common.errors import Violations
from services.validator import report as r
from services.validator.engine import MAX_ANSWER_BYTES, MAX_EVIDENCE

MAX_ID_CHARS = 256
MAX_EVIDENCE_TEXT_CHARS = 20_000

_VERDICT = {
    r.Verdict.GROUNDED: pb.VALIDATION_VERDICT_GROUNDED,
    r.Verdict.REFUSAL: pb.VALIDATION_VERDICT_REFUSAL,
    r.Verdict.NOT_GROUNDED: pb.VALIDATION_VERDICT_NOT_GROUNDED,
}
_SENTENCE_VERDICT = {
    r.SentenceVerdict.SUPPORTED: pb.SENTENCE_VERDICT_SUPPORTED,
    r.SentenceVerdict.EXEMPT: pb.SENTENCE_VERDICT_EXEMPT,
    r.SentenceVerdict.UNSUPPORTED: pb.SENTENCE_VERDICT_UNSUPPORTED,
}
_REASON: dict[r.Reason, pb.ValidationReason] = {
    # The generated stubs type Value() as int; the enum constants are ints at runtime too.
    reason: cast(
        pb.ValidationReason, pb.ValidationReason.Value(f"VALIDATION_REASON_{reason.value}")
    )
    for reason in r.Reason
}
_TIER: dict[r.Tier, pb.ValidationTier] = {
    tier: cast(pb.ValidationTier, pb.ValidationTier.Value(f"VALIDATION_TIER_{tier.name}"))
    for tier in r.Tier
}
VERDICT_FROM_PROTO = {v: k for k, v in _VERDICT.items()}
TIER_FROM_PROTO = {v: k for k, v in _TIER.items()}
SENTENCE_VERDICT_FROM_PROTO = {v: k for k, v in _SENTENCE_VERDICT.items()}
REASON_FROM_PROTO = {v: k for k, v in _REASON.items()}


_THRESHOLDS = ("single_citation_threshold", "multi_citation_threshold")
_SWITCHES = (
    "check_numbers",
    "check_negation",
    "require_complete_citation",
    "check_penalties",
    "check_entailment",
)
_MODEL_THRESHOLDS = ("entail_threshold", "contradiction_threshold", "coverage_rescue_threshold")


class EvidenceItem(NamedTuple):
    """What the engine reads of a passage (the rest of its provenance plays no part)."""

    semantic_id: str
    text: str


def request_from_proto(
    request: pb.ValidateAnswerRequest,
) -> tuple[str, list[EvidenceItem], r.ValidationOptions]:
    """Check limits and convert; every violation is reported at once."""
    violations = Violations()
    answer_bytes = len(request.answer.encode("utf-8"))
    violations.check(
        answer_bytes <= MAX_ANSWER_BYTES,
        "answer",
        f"must be at most {MAX_ANSWER_BYTES} bytes (got {answer_bytes})",
    )
    violations.check(
        len(request.evidence) <= MAX_EVIDENCE,
        "evidence",
        f"must hold at most {MAX_EVIDENCE} passages (got {len(request.evidence)})",
    )
    seen: set[str] = set()
    evidence: list[EvidenceItem] = []
    for i, passage in enumerate(request.evidence[: MAX_EVIDENCE + 1]):
        sid = passage.semantic_id
        text = passage.text
        evidence.append(EvidenceItem(sid, text))
        if not sid.strip():
            violations.add(f"evidence[{i}].semantic_id", "must not be empty")
        elif len(sid) > MAX_ID_CHARS:
            violations.add(
                f"evidence[{i}].semantic_id", f"must be at most {MAX_ID_CHARS} characters"
            )
        elif sid in seen:
            violations.add(f"evidence[{i}].semantic_id", f"duplicate id {sid!r}")
        seen.add(sid)
        if len(text) > MAX_EVIDENCE_TEXT_CHARS:
            violations.add(
                f"evidence[{i}].text", f"must be at most {MAX_EVIDENCE_TEXT_CHARS} characters"
            )
    options = r.ValidationOptions()
    o = request.options
    for name in (*_THRESHOLDS, *_MODEL_THRESHOLDS):
        if o.HasField(name):
            value = getattr(o, name)
            if not 0.0 <= value <= 1.0:
                violations.add(f"options.{name}", "must be between 0 and 1")
    violations.raise_if_any()
    overrides = {
        name: getattr(o, name)
        for name in (*_THRESHOLDS, *_SWITCHES, *_MODEL_THRESHOLDS)
        if o.HasField(name)
    }
    if overrides:
        options = r.ValidationOptions(**{**_options_dict(options), **overrides})
    return request.answer, evidence, options


def _options_dict(options: r.ValidationOptions) -> dict[str, object]:
    return {name: getattr(options, name) for name in r.ValidationOptions.__dataclass_fields__}


def report_to_proto(report: r.ValidationReport) -> pb.ValidateAnswerResponse:
    return pb.ValidateAnswerResponse(
        verdict=_VERDICT[report.verdict],
        reason=_REASON[report.reason],
        support_score=report.support_score,
        cited_ids=report.cited_ids,
        invalid_citations=report.invalid_citations,
        malformed_citations=[
            pb.MalformedCitation(
                token=m.token, char_start=m.char_start, char_end=m.char_end, problem=m.problem
            )
            for m in report.malformed_citations
        ],
        missing_citations=report.missing_citations,
        uncovered_sentences=report.uncovered_sentences,
        sentences=[
            pb.SentenceReport(
                index=s.index,
                text=s.text,
                verdict=_SENTENCE_VERDICT[s.verdict],
                reason=_REASON[s.reason],
                coverage=s.coverage,
                cited_ids=s.cited_ids,
                invalid_ids=s.invalid_ids,
                missing_ids=s.missing_ids,
                spans=[
                    pb.SupportSpan(
                        semantic_id=sp.semantic_id, char_start=sp.char_start, char_end=sp.char_end
                    )
                    for sp in s.spans
                ],
                detail=s.detail,
                entailment=_scores_to_proto(s.entailment),
                decided_by=_TIER[s.decided_by] if s.decided_by else pb.VALIDATION_TIER_UNSPECIFIED,
            )
            for s in report.sentences
        ],
        tiers=[_TIER[t] for t in report.tiers],
        entailment_model=report.entailment_model,
    )


def _scores_to_proto(e: r.EntailmentScores | None) -> pb.EntailmentScores | None:
    if e is None:
        return None
    return pb.EntailmentScores(
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


def _scores_from_proto(s: pb.SentenceReport) -> r.EntailmentScores | None:
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


def report_from_proto(response: pb.ValidateAnswerResponse) -> r.ValidationReport:
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
            )
            for s in response.sentences
        ),
        tiers=tuple(TIER_FROM_PROTO[t] for t in response.tiers if t in TIER_FROM_PROTO),
        entailment_model=response.entailment_model,
    )

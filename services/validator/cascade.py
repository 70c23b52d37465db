"""The judge cascade: which sentences the local tiers left uncertain, and the judge's word on them.

The local tiers run first and settle what they are sure of. A sentence goes to the judge when:

- the entailment model scored it with P(entailment) inside the uncertainty band
  ``[band.low, band.high)``: an acceptance just above the entailment threshold, a rejection just
  below it, a contradiction the model was not sure of, a paraphrase it could not rescue;
- or only rules under review rejected it, with no model score to say how sure to be. By
  default those are the two word-counting rules, coverage and missing citation
  (``DEFAULT_REVIEW``);
- or, without the entailment tier, the cheap tiers accepted it (there is no score to be sure
  of).

Never escalated: citation validity, verbatim quotes, and the number, negation and penalty
parsers unless an operator puts them under review.

The judge's verdict replaces the local one, in both directions, and the answer's verdict is
worked out again. Anything but a clear yes leaves the sentence unverified (fail closed). With
no judge configured, none of this runs and the report is the local tiers' alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from services.common.judge import Band, Item, Judge, Outcome, Task, Verdict
from services.common.language.citations import EvidenceIndex, EvidenceLike, scan
from services.common.validation import (
    JudgeDecision,
    Reason,
    SentenceReport,
    SentenceVerdict,
    Tier,
    ValidationReport,
)
from services.validator.engine import resummarise

# The default uncertainty band on P(entailment) (docs/JUDGE.md, "Choosing the band").
DEFAULT_BAND = Band(0.05, 0.9)

# Rules whose rejection a judge may review (VALIDATOR_JUDGE_REVIEW picks among them). The
# model's own rejections (not entailed, contradicted) are reviewed whenever their score is in
# the band. Citation validity (a cited id that is not in the evidence, a malformed token, no
# citation at all) is never reviewable: there is no cited evidence to judge against.
REVIEWABLE = frozenset(
    {
        Reason.LOW_COVERAGE,
        Reason.MISSING_CITATION,
        Reason.NUMBER_MISMATCH,
        Reason.NEGATION_MISMATCH,
        Reason.MODALITY_MISMATCH,
        Reason.PENALTY_MISMATCH,
        Reason.ROLE_MISMATCH,
    }
)
# The default: the two word-counting rules. Coverage fails a paraphrase in other words, and the
# missing-citation rule fires when an uncited passage shares words with the sentence, whether or
# not the sentence needs it; both are guesses the judge can check against the cited text. The
# number, negation and penalty parsers compare parsed values, so they stay final.
DEFAULT_REVIEW = frozenset({Reason.LOW_COVERAGE, Reason.MISSING_CITATION})
_MODEL_REASONS = frozenset({Reason.NOT_ENTAILED, Reason.CONTRADICTED})

_OUTCOME_REASON = {
    Outcome.NO: Reason.JUDGE_REJECTED,
    Outcome.UNAVAILABLE: Reason.JUDGE_UNAVAILABLE,
    Outcome.BUDGET_EXHAUSTED: Reason.JUDGE_BUDGET_EXHAUSTED,
}


@dataclass(frozen=True, slots=True)
class Escalation:
    """One uncertain sentence: where it is in the report, what to ask, the local score."""

    index: int
    item: Item
    local_score: float | None


def uncertain(
    report: ValidationReport,
    evidence: Sequence[EvidenceLike],
    band: Band,
    review: frozenset[Reason] = DEFAULT_REVIEW,
) -> list[Escalation]:
    """The sentences of ``report`` to send to the judge, in answer order.

    ``review``: the rules (of ``REVIEWABLE``) whose rejections the judge may overturn.
    """
    model_ran = Tier.ENTAILMENT in report.tiers
    picked = [
        (s, local)
        for s in report.sentences
        if (local := _local_score(s, model_ran, band, review)) is not False
    ]
    if not picked:
        return []
    index = EvidenceIndex.build(evidence)
    found: list[Escalation] = []
    for sentence, local in picked:
        found.append(
            Escalation(
                sentence.index,
                Item(
                    _claim(sentence.text, index),
                    tuple(
                        (i, index.texts[index.position[i]])
                        for i in sentence.cited_ids
                        if i in index.position
                    ),
                ),
                None if local is True else local,
            )
        )
    return found


def _local_score(
    sentence: SentenceReport, model_ran: bool, band: Band, review: frozenset[Reason]
) -> float | bool:
    """The local score that makes ``sentence`` uncertain (True when there is none to give),
    or False when the local tiers settled it."""
    scores = sentence.entailment
    if not sentence.cited_ids or sentence.invalid_ids:
        return False
    if scores is not None and scores.verbatim:
        return False
    if sentence.verdict is SentenceVerdict.SUPPORTED:
        if not model_ran:
            return sentence.decided_by is Tier.COVERAGE
        if sentence.decided_by is Tier.ENTAILMENT and scores is not None:
            return scores.entailment if band.contains(scores.entailment) else False
        return False
    if sentence.verdict is not SentenceVerdict.UNSUPPORTED:
        return False
    rules = frozenset(sentence.failed or (sentence.reason,)) - _MODEL_REASONS
    if not rules <= review:
        return False  # a rule the judge may not overturn
    if scores is not None:
        # The model scored it (a rejection of its own, or a paraphrase it could not rescue).
        return scores.entailment if band.contains(scores.entailment) else False
    # Only reviewable word-counting rules rejected it and no model score says how sure to be.
    return bool(rules)


def _claim(text: str, index: EvidenceIndex) -> str:
    """The sentence without its citation markers (what the judge is asked about)."""
    kept, last = [], 0
    for citation in scan(text, index):
        kept.append(text[last : citation.start])
        last = citation.end
    kept.append(text[last:])
    return " ".join("".join(kept).split()).replace(" .", ".")


def apply(
    report: ValidationReport, escalations: Sequence[Escalation], verdicts: Sequence[Verdict]
) -> ValidationReport:
    """``report`` with the judge's verdicts in place of the local ones, re-summarised."""
    if not escalations:
        return report
    sentences = list(report.sentences)
    for escalation, verdict in zip(escalations, verdicts, strict=True):
        sentences[escalation.index] = _decided(
            sentences[escalation.index], verdict, escalation.local_score
        )
    tiers = report.tiers if Tier.JUDGE in report.tiers else (*report.tiers, Tier.JUDGE)
    model = verdicts[0].model if verdicts else ""
    return resummarise(replace(report, tiers=tiers, judge_model=model), sentences)


def _decided(sentence: SentenceReport, verdict: Verdict, local: float | None) -> SentenceReport:
    decision = JudgeDecision(
        model=verdict.model,
        outcome=verdict.outcome.value,
        score=verdict.score,
        cached=verdict.cached,
        local_score=local,
    )
    was = (
        f"the local tiers were unsure (P(entailment) {local:.2f})"
        if local is not None
        else "the local tiers could not score it (no entailment tier)"
    )
    if sentence.verdict is SentenceVerdict.UNSUPPORTED and sentence.detail:
        was += f"; they said: {sentence.detail}"
    score = f", P(yes) {verdict.score:.2f}" if verdict.score is not None else ""
    if verdict.yes:
        # Supported by its cited passages alone: an uncited passage it shares words with was
        # not needed, so it is no longer listed as missing.
        return replace(
            sentence,
            verdict=SentenceVerdict.SUPPORTED,
            reason=Reason.SUPPORTED,
            failed=(),
            missing_ids=(),
            decided_by=Tier.JUDGE,
            judge=decision,
            detail=f"{was}; the judge ({verdict.model}) found it supported{score}",
        )
    said = {
        Outcome.NO: f"the judge ({verdict.model}) found it not supported{score}",
        Outcome.UNAVAILABLE: f"not verified: {verdict.detail or 'the judge gave no verdict'}",
        Outcome.BUDGET_EXHAUSTED: f"not verified: {verdict.detail or 'judge budget spent'}",
    }[verdict.outcome]
    if verdict.outcome is Outcome.NO and verdict.detail:
        said += f" ({verdict.detail})"
    reason = _OUTCOME_REASON[verdict.outcome]
    return replace(
        sentence,
        verdict=SentenceVerdict.UNSUPPORTED,
        reason=reason,
        failed=(reason, *sentence.failed),
        decided_by=Tier.JUDGE,
        judge=decision,
        detail=f"{was}; {said}",
    )


async def escalate(
    report: ValidationReport,
    evidence: Sequence[EvidenceLike],
    judge: Judge,
    band: Band,
    review: frozenset[Reason] = DEFAULT_REVIEW,
    *,
    timeout_s: float,
) -> tuple[ValidationReport, int]:
    """``report`` with the judge's word on its uncertain sentences (one batched request), and
    how many sentences were asked about. The service and the ``validate`` CLI both use it, so
    both give the same judgement."""
    escalations = uncertain(report, evidence, band, review)
    if not escalations:
        return report, 0
    verdicts = await judge.judge(Task.SUPPORT, [e.item for e in escalations], timeout_s=timeout_s)
    return apply(report, escalations, verdicts), len(escalations)

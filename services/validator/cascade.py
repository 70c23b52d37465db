"""The judge cascade: which sentences the local tiers left uncertain, and the judge's word on them.

The local tiers run first and settle what they are sure of: citation, number, negation and
penalty failures, verbatim quotes, and every sentence whose entailment score lies outside the
uncertainty band. A sentence whose P(entailment) lies inside ``[band.low, band.high)`` — an
acceptance just above the entailment threshold, a rejection just below it, a contradiction the
model was not sure of, a paraphrase it could not rescue — goes to the judge. Without the
entailment tier there is no score to be sure of, so every sentence the cheap tiers accept goes.

The judge's verdict replaces the local one, in both directions, and the answer's verdict is
worked out again. Anything but a clear yes leaves the sentence unverified (fail closed). With
no judge configured, none of this runs and the report is the local tiers' alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from services.common.judge import Band, Item, Outcome, Verdict
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

# The default uncertainty band on P(entailment) (docs/VALIDATOR.md, "Choosing the band").
DEFAULT_BAND = Band(0.05, 0.9)

# Local rejections a judge may overturn: the model's own (not entailed, contradicted) and a
# paraphrase the coverage rule failed that the model scored in the band. Deterministic
# failures (citations, numbers, negation, penalties) are never escalated.
_REVIEWABLE = frozenset({Reason.NOT_ENTAILED, Reason.CONTRADICTED, Reason.LOW_COVERAGE})

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
    report: ValidationReport, evidence: Sequence[EvidenceLike], band: Band
) -> list[Escalation]:
    """The sentences of ``report`` to send to the judge, in answer order."""
    model_ran = Tier.ENTAILMENT in report.tiers
    picked = [
        (s, local)
        for s in report.sentences
        if (local := _local_score(s, model_ran, band)) is not False
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


def _local_score(sentence: SentenceReport, model_ran: bool, band: Band) -> float | bool:
    """The local score that makes ``sentence`` uncertain (True when there is none to give),
    or False when the local tiers settled it."""
    scores = sentence.entailment
    if not sentence.cited_ids or sentence.invalid_ids or sentence.missing_ids:
        return False
    if scores is not None and scores.verbatim:
        return False
    if sentence.verdict is SentenceVerdict.SUPPORTED:
        if not model_ran:
            return sentence.decided_by is Tier.COVERAGE
        if sentence.decided_by is Tier.ENTAILMENT and scores is not None:
            return scores.entailment if band.contains(scores.entailment) else False
        return False
    reviewable = sentence.verdict is SentenceVerdict.UNSUPPORTED and sentence.reason in _REVIEWABLE
    if reviewable and scores is not None and band.contains(scores.entailment):
        return scores.entailment
    return False


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
        return replace(
            sentence,
            verdict=SentenceVerdict.SUPPORTED,
            reason=Reason.SUPPORTED,
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
    return replace(
        sentence,
        verdict=SentenceVerdict.UNSUPPORTED,
        reason=_OUTCOME_REASON[verdict.outcome],
        decided_by=Tier.JUDGE,
        judge=decision,
        detail=f"{was}; {said}",
    )

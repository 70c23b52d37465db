"""The judge cascade: which sentences are uncertain, and how the judge's verdicts fold in."""

from __future__ import annotations

import pytest

from services.common.judge import Band, Outcome, Verdict
from services.common.validation import (
    Reason,
    SentenceVerdict,
    Tier,
    ValidationReport,
)
from services.common.validation import Verdict as AnswerVerdict
from services.validator import cascade
from services.validator.engine import EntailmentTier, validate
from tests.unit.validator.test_entailment import EVIDENCE, THRESHOLDS, ScriptedModel

BAND = Band(0.1, 0.9)
THEFT = "Theft is punishable with imprisonment of up to three years [IPC_379_0]."
DEFINITION = "Theft is moving movable property dishonestly [IPC_378_0]."


def run(answer: str, rules: dict[str, tuple[float, float, float]]) -> ValidationReport:
    return validate(answer, EVIDENCE, tier=EntailmentTier(ScriptedModel(rules), THRESHOLDS))


def yes(model: str = "checker") -> Verdict:
    return Verdict(Outcome.YES, model, 0.97)


class TestUncertain:
    @pytest.mark.parametrize(
        ("scores", "escalated"),
        [
            ((0.95, 0.03, 0.02), False),  # entailed with confidence: settled locally
            ((0.65, 0.30, 0.05), True),  # entailed, just past the 0.6 threshold
            ((0.40, 0.50, 0.10), True),  # not entailed, but not far off
            ((0.05, 0.90, 0.05), False),  # clearly not entailed: settled
            ((0.15, 0.10, 0.75), True),  # contradicted, with some entailment left
            ((0.02, 0.03, 0.95), False),  # clearly contradicted
        ],
    )
    def test_uncertain_picks_model_scores_inside_the_band(
        self, scores: tuple[float, float, float], escalated: bool
    ) -> None:
        report = run(THEFT, {"Theft": scores})
        found = cascade.uncertain(report, EVIDENCE, BAND)
        assert bool(found) is escalated
        if found:
            (only,) = found
            assert only.local_score == pytest.approx(scores[0])
            assert only.item.text == ("Theft is punishable with imprisonment of up to three years.")
            assert only.item.evidence == (("IPC_379_0", EVIDENCE[0].text),)

    def test_uncertain_never_escalates_a_deterministic_failure(self) -> None:
        report = run(
            "Theft is punishable with imprisonment of up to ten years [IPC_379_0].",
            {"Theft": (0.5, 0.4, 0.1)},
        )
        assert report.reason is Reason.NUMBER_MISMATCH
        assert cascade.uncertain(report, EVIDENCE, BAND) == []

    def test_uncertain_never_escalates_a_verbatim_quote(self) -> None:
        quote = f"{EVIDENCE[0].text.rstrip('.')} [IPC_379_0]."
        report = run(quote, {"Whoever": (0.5, 0.4, 0.1)})
        assert cascade.uncertain(report, EVIDENCE, BAND) == []

    def test_uncertain_includes_a_paraphrase_the_model_could_not_rescue(self) -> None:
        report = run("Stealing can land you in jail [IPC_379_0].", {"Stealing": (0.7, 0.2, 0.1)})
        assert report.reason is Reason.LOW_COVERAGE
        (only,) = cascade.uncertain(report, EVIDENCE, BAND)
        assert only.local_score == pytest.approx(0.7)

    def test_without_the_model_every_accepted_sentence_is_uncertain(self) -> None:
        report = validate(f"{THEFT} {DEFINITION}", EVIDENCE)
        assert report.verdict is AnswerVerdict.GROUNDED
        found = cascade.uncertain(report, EVIDENCE, BAND)
        assert [e.index for e in found] == [0, 1]
        assert all(e.local_score is None for e in found)

    def test_a_narrow_band_escalates_nothing(self) -> None:
        report = run(THEFT, {"Theft": (0.65, 0.30, 0.05)})
        assert cascade.uncertain(report, EVIDENCE, Band(0.0, 0.0)) == []


class TestApply:
    def test_judge_no_overturns_an_uncertain_acceptance(self) -> None:
        report = run(THEFT, {"Theft": (0.65, 0.30, 0.05)})
        assert report.verdict is AnswerVerdict.GROUNDED
        escalations = cascade.uncertain(report, EVIDENCE, BAND)
        judged = cascade.apply(report, escalations, [Verdict(Outcome.NO, "checker", 0.08)])
        s = judged.sentences[0]
        assert judged.verdict is AnswerVerdict.NOT_GROUNDED
        assert judged.reason is Reason.JUDGE_REJECTED
        assert (s.verdict, s.decided_by) == (SentenceVerdict.UNSUPPORTED, Tier.JUDGE)
        assert s.judge is not None and (s.judge.outcome, s.judge.score) == ("no", 0.08)
        assert s.judge.local_score == pytest.approx(0.65)
        assert judged.tiers[-1] is Tier.JUDGE and judged.judge_model == "checker"
        assert judged.uncovered_sentences == (0,) and judged.support_score == 0.0

    def test_judge_yes_overturns_an_uncertain_rejection(self) -> None:
        report = run(THEFT, {"Theft": (0.40, 0.50, 0.10)})
        assert report.reason is Reason.NOT_ENTAILED
        escalations = cascade.uncertain(report, EVIDENCE, BAND)
        judged = cascade.apply(report, escalations, [yes()])
        assert judged.verdict is AnswerVerdict.GROUNDED and judged.support_score == 1.0
        s = judged.sentences[0]
        assert (s.verdict, s.reason, s.decided_by) == (
            SentenceVerdict.SUPPORTED,
            Reason.SUPPORTED,
            Tier.JUDGE,
        )
        assert "found it supported" in s.detail and "0.40" in s.detail

    @pytest.mark.parametrize(
        ("outcome", "reason"),
        [
            (Outcome.UNAVAILABLE, Reason.JUDGE_UNAVAILABLE),
            (Outcome.BUDGET_EXHAUSTED, Reason.JUDGE_BUDGET_EXHAUSTED),
        ],
    )
    def test_no_verdict_fails_closed_even_where_the_model_accepted(
        self, outcome: Outcome, reason: Reason
    ) -> None:
        report = run(THEFT, {"Theft": (0.65, 0.30, 0.05)})
        escalations = cascade.uncertain(report, EVIDENCE, BAND)
        judged = cascade.apply(report, escalations, [Verdict(outcome, "checker", detail="x")])
        assert judged.verdict is AnswerVerdict.NOT_GROUNDED and judged.reason is reason
        assert "not verified" in judged.sentences[0].detail

    def test_settled_sentences_keep_their_local_verdict(self) -> None:
        answer = f"{THEFT} {DEFINITION}"
        report = run(answer, {"Theft is punishable": (0.65, 0.3, 0.05), "moving": (0.97, 0, 0)})
        escalations = cascade.uncertain(report, EVIDENCE, BAND)
        assert [e.index for e in escalations] == [0]
        judged = cascade.apply(report, escalations, [yes()])
        assert [s.decided_by for s in judged.sentences] == [Tier.JUDGE, Tier.ENTAILMENT]
        assert judged.sentences[1] == report.sentences[1]

    def test_nothing_escalated_leaves_the_report_as_it_was(self) -> None:
        report = run(THEFT, {"Theft": (0.95, 0.03, 0.02)})
        assert cascade.apply(report, [], []) is report


# s.379's words, plus "dishonestly" and "movable property" from s.378, which it does not cite.
USES_UNCITED = (
    "Whoever commits theft by moving movable property dishonestly shall be punished with "
    "imprisonment [IPC_379_0]."
)


class TestReview:
    def test_engine_lists_every_rule_a_sentence_broke(self) -> None:
        report = validate(
            "Theft is not punishable with imprisonment of up to ten years [IPC_379_0].", EVIDENCE
        )
        s = report.sentences[0]
        assert s.reason is s.failed[0]
        assert {Reason.NEGATION_MISMATCH, Reason.NUMBER_MISMATCH} <= set(s.failed)
        assert validate(THEFT, EVIDENCE).sentences[0].failed == ()

    def test_a_missing_citation_alone_goes_to_the_judge_by_default(self) -> None:
        report = run(USES_UNCITED, {})
        assert report.sentences[0].failed == (Reason.MISSING_CITATION,)
        (only,) = cascade.uncertain(report, EVIDENCE, BAND)
        assert only.local_score is None
        assert only.item.evidence == (("IPC_379_0", EVIDENCE[0].text),)
        assert cascade.uncertain(report, EVIDENCE, BAND, review=frozenset()) == []

    def test_a_yes_clears_the_missing_citation(self) -> None:
        report = run(USES_UNCITED, {})
        judged = cascade.apply(report, cascade.uncertain(report, EVIDENCE, BAND), [yes()])
        assert judged.verdict is AnswerVerdict.GROUNDED
        assert judged.missing_citations == () and judged.sentences[0].missing_ids == ()

    def test_parsed_rules_are_reviewed_only_when_configured(self) -> None:
        report = run("Theft is punishable with imprisonment of up to ten years [IPC_379_0].", {})
        assert report.sentences[0].failed == (Reason.NUMBER_MISMATCH, Reason.PENALTY_MISMATCH)
        assert cascade.uncertain(report, EVIDENCE, BAND) == []
        numbers = cascade.DEFAULT_REVIEW | {Reason.NUMBER_MISMATCH}
        assert cascade.uncertain(report, EVIDENCE, BAND, numbers) == []  # the penalty rule too
        both = numbers | {Reason.PENALTY_MISMATCH}
        assert len(cascade.uncertain(report, EVIDENCE, BAND, both)) == 1

    def test_a_judge_no_keeps_the_local_rules_after_its_own(self) -> None:
        report = run(USES_UNCITED, {})
        escalations = cascade.uncertain(report, EVIDENCE, BAND)
        judged = cascade.apply(report, escalations, [Verdict(Outcome.NO, "checker")])
        assert judged.sentences[0].failed == (Reason.JUDGE_REJECTED, Reason.MISSING_CITATION)

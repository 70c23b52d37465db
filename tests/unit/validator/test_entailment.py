"""The entailment tier's decisions, windows and folding into the report, with a scripted model.

The real shipped model is exercised in test_nli_model.py and the integration tests; here a
fake with a call log makes each decision rule visible and checks what the model is asked.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from services.common.errors import DeadlineExceededError, ModelUnavailableError
from services.common.language.sentences import split_sentences
from services.common.validation import Reason, SentenceVerdict, Tier, ValidationOptions, Verdict
from services.validator.engine import EntailmentTier, validate
from services.validator.entailment import Claim, Outcome, Thresholds, judge
from tests.unit.validator.samples import chunk

THRESHOLDS = Thresholds(entail=0.6, contradiction=0.5, rescue=0.8)
EVIDENCE = [
    chunk(
        "IPC_379_0",
        "Whoever commits theft shall be punished with imprisonment of either description for a "
        "term which may extend to three years, or with fine, or with both.",
    ),
    chunk(
        "IPC_378_0",
        "Whoever, intending to take dishonestly any movable property, moves it commits theft.",
    ),
]


@dataclass
class ScriptedModel:
    """Scores every pair by the first rule whose key occurs in the hypothesis; logs each call."""

    rules: dict[str, tuple[float, float, float]]
    default: tuple[float, float, float] = (0.05, 0.9, 0.05)
    window: int = 256
    name: str = "scripted"
    calls: list[list[tuple[str, str]]] = field(default_factory=list)
    fail: bool = False

    def window_tokens(self) -> int:
        return self.window

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        spans, start = [], None
        for i, ch in enumerate(text + " "):
            if ch.isspace() and start is not None:
                spans.append((start, i))
                start = None
            elif not ch.isspace() and start is None:
                start = i
        return spans

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, float, float]]:
        if self.fail:
            raise ModelUnavailableError("the entailment model failed to run: out of memory")
        self.calls.append(list(pairs))
        return [next((v for k, v in self.rules.items() if k in h), self.default) for _, h in pairs]


class RandomCase:
    """Random claims and passages over a small vocabulary, and a model whose probabilities are
    random but fixed per pair: the property tests below compare two ways of judging them."""

    WORDS = ("theft", "fine", "term", "years", "hurt", "property", "whoever", "punished")

    def __init__(self, seed: int) -> None:
        import random

        self.rng = random.Random(seed)
        self._table: dict[tuple[str, str], tuple[float, float, float]] = {}

    def sentence(self) -> str:
        n = self.rng.randint(2, 6)
        return " ".join(self.rng.choice(self.WORDS) for _ in range(n)).capitalize() + "."

    def settle_at(self) -> float | None:
        return self.rng.choice([None, THRESHOLDS.rescue])

    def model(self) -> ScriptedModel:
        model = ScriptedModel({})
        model.predict = lambda pairs: [self._probs(p) for p in pairs]  # type: ignore[method-assign]
        return model

    def _probs(self, pair: tuple[str, str]) -> tuple[float, float, float]:
        if pair not in self._table:
            e, c = self.rng.random(), self.rng.random()
            self._table[pair] = (e, max(0.0, 1 - e - c), c)
        return self._table[pair]


def tier(model: ScriptedModel) -> EntailmentTier:
    return EntailmentTier(model, THRESHOLDS)


class TestDecisions:
    def test_judge_entails_above_the_threshold(self) -> None:
        model = ScriptedModel({"punished": (0.9, 0.05, 0.05)})
        (j,) = judge(
            [Claim("Theft is punished.", (("a", "Theft is punished severely."),))],
            model,
            THRESHOLDS,
            split_sentences,
        )
        assert j.outcome is Outcome.ENTAILED and j.entailment == pytest.approx(0.9)

    def test_judge_contradicts_when_not_entailed(self) -> None:
        model = ScriptedModel({"rewarded": (0.1, 0.2, 0.7)})
        (j,) = judge(
            [Claim("Theft is rewarded.", (("a", "Theft is punished."),))],
            model,
            THRESHOLDS,
            split_sentences,
        )
        assert j.outcome is Outcome.CONTRADICTED and j.scores.semantic_id == "a"

    def test_judge_not_entailed_when_neither(self) -> None:
        (j,) = judge(
            [Claim("Theft is common.", (("a", "Theft is punished."),))],
            ScriptedModel({}),
            THRESHOLDS,
            split_sentences,
        )
        assert j.outcome is Outcome.NOT_ENTAILED

    def test_judge_verbatim_sentence_needs_no_model_call(self) -> None:
        model = ScriptedModel({})
        (j,) = judge(
            [Claim("Theft is punished", (("a", "Intro here. Theft is punished."),))],
            model,
            THRESHOLDS,
            split_sentences,
        )
        assert j.outcome is Outcome.ENTAILED and j.scores.verbatim and model.calls == []
        assert (j.scores.char_start, j.scores.char_end) == (12, 30)

    @pytest.mark.parametrize(
        ("claim", "verbatim"),
        [
            ("The awards took place in Paradise, Nevada, U.S.A", True),  # a run of whole sentences
            ("During the ceremony, prizes were given", True),
            ("Both were announced", True),  # a clause after ";"
            ("took place in Paradise", False),  # cut inside a clause
            ("prizes were given; Both", False),
        ],
    )
    def test_judge_quote_of_whole_sentences_is_verbatim(self, claim: str, verbatim: bool) -> None:
        text = (
            "The awards took place in Paradise, Nevada, U.S.A. During the ceremony, prizes were "
            "given; both were announced."
        )
        model = ScriptedModel({})
        (j,) = judge([Claim(claim, (("a", text),))], model, THRESHOLDS, lambda t: [(0, len(t))])
        assert j.scores.verbatim is verbatim

    def test_judge_stops_at_the_first_premise_that_settles_the_claim(self) -> None:
        model = ScriptedModel({})
        model.predict = lambda pairs: (  # type: ignore[method-assign]
            model.calls.append(list(pairs))
            or [(0.9, 0.05, 0.05) if "theft" in p else (0.1, 0.8, 0.1) for p, _ in pairs]
        )
        passage = "Robbery is defined elsewhere. Whoever commits theft is punished. Fine too."
        (j,) = judge(
            [Claim("Theft is punished.", (("a", passage),))], model, THRESHOLDS, split_sentences
        )
        scored = [p for call in model.calls for p, _ in call]
        # The sentence sharing most content words comes first and settles it alone.
        assert scored == ["Whoever commits theft is punished."]
        assert j.outcome is Outcome.ENTAILED and j.scores.windows == 1

    def test_judge_scores_every_pair_of_a_claim_it_cannot_settle(self) -> None:
        model = ScriptedModel({}, default=(0.3, 0.4, 0.3))
        passage = "One sentence. Another one. A third."
        (j,) = judge([Claim("A claim.", (("a", passage),))], model, THRESHOLDS, split_sentences)
        assert len([p for call in model.calls for p in call]) == 4  # 3 sentences + the passage
        assert j.outcome is Outcome.NOT_ENTAILED and j.scores.windows == 4

    def test_a_rescue_claim_is_settled_only_at_the_rescue_threshold(self) -> None:
        model = ScriptedModel({})
        model.predict = lambda pairs: (  # type: ignore[method-assign]
            model.calls.append(list(pairs))
            or [(0.7, 0.2, 0.1) if p.startswith("Theft") else (0.85, 0.1, 0.05) for p, _ in pairs]
        )
        passage = "Theft is punished. Punishment follows theft always."
        claim = Claim("Theft is punished harshly.", (("a", passage),), settle_at=THRESHOLDS.rescue)
        (j,) = judge([claim], model, THRESHOLDS, split_sentences)
        assert len([p for call in model.calls for p in call]) == 2  # 0.7 < rescue 0.8: go on
        assert j.outcome is Outcome.ENTAILED and j.entailment == 0.85

    @pytest.mark.parametrize("seed", range(40))
    def test_lazy_scoring_gives_the_outcome_exhaustive_scoring_gives(self, seed: int) -> None:
        case = RandomCase(seed)
        claims = [
            Claim(
                case.sentence(),
                tuple(
                    (f"p{i}", " ".join(case.sentence() for _ in range(case.rng.randint(1, 4))))
                    for i in range(case.rng.randint(1, 3))
                ),
                settle_at=case.settle_at(),
            )
            for _ in range(4)
        ]
        got = judge(claims, case.model(), THRESHOLDS, split_sentences)
        for claim, j in zip(claims, got, strict=True):
            (full,) = judge([claim], case.model(), THRESHOLDS, split_sentences, lazy=False)
            assert full.scores.windows >= j.scores.windows
            assert j.outcome is full.outcome
            if j.outcome is not Outcome.ENTAILED:
                assert j.scores == full.scores
            elif claim.settle_at is not None:  # a rescue is granted exactly when it was before
                bar = THRESHOLDS.rescue
                assert (j.entailment >= bar) == (full.entailment >= bar)

    def test_judge_asks_for_every_claims_next_pair_in_one_call(self) -> None:
        model = ScriptedModel({}, default=(0.3, 0.4, 0.3))
        claims = [
            Claim("Theft is punished.", (("a", "Whoever commits theft is punished. Fine too."),)),
            Claim("Hurt is punished.", (("b", "Whoever causes hurt is punished."),)),
            Claim("Quoted.", (("c", "Quoted."),)),  # verbatim: never scored
        ]
        judge(claims, model, THRESHOLDS, split_sentences)
        # Round one: the best premise of each claim the model must score, side by side; then
        # the first claim's two other premises (two sentences and the passage) one at a time,
        # since neither settles it; the second claim has no other premise.
        assert [len(call) for call in model.calls] == [2, 1, 1]
        assert {h for _, h in model.calls[0]} == {"Theft is punished.", "Hurt is punished."}

    @pytest.mark.parametrize("seed", range(20))
    def test_judging_claims_together_equals_judging_each_alone(self, seed: int) -> None:
        case = RandomCase(seed)
        shared = " ".join(case.sentence() for _ in range(3))  # cited by several claims
        claims = [
            Claim(
                case.sentence(),
                (("s", shared), (f"p{i}", case.sentence())),
                settle_at=case.settle_at(),
            )
            for i in range(5)
        ]
        model = case.model()
        together = judge(claims, model, THRESHOLDS, split_sentences)
        alone = [judge([c], model, THRESHOLDS, split_sentences)[0] for c in claims]
        assert together == alone

    @pytest.mark.parametrize(
        ("claim", "verbatim"),
        [
            ("Under the Code, theft is punished.", True),
            ("According to section 379 of the IPC, theft is punished.", True),
            ("The statute provides that theft is punished.", True),
            # Any registered act, by any of its names (rule L2): the validator's own list held
            # the IPC's two names only.
            ("Under the Motor Vehicles Act, theft is punished.", True),
            ("According to the penal code, theft is punished.", True),
            ("The Code of Criminal Procedure provides that theft is punished.", True),
            # Lead-ins that could change the meaning are no attribution: the model judges.
            ("It is not true that theft is punished.", False),
            ("Some argue that theft is punished.", False),
            ("Under the Code, theft is sometimes punished.", False),  # not a quote
        ],
    )
    def test_judge_an_attributed_quote_is_verbatim(self, claim: str, verbatim: bool) -> None:
        model = ScriptedModel({})
        (j,) = judge(
            [Claim(claim, (("a", "Theft is punished."),))], model, THRESHOLDS, split_sentences
        )
        assert j.scores.verbatim is verbatim
        assert (model.calls == []) is verbatim

    def test_judge_names_the_deciding_sentence_of_a_passage(self) -> None:
        model = ScriptedModel({})
        model.predict = lambda pairs: [  # type: ignore[method-assign]
            (0.9, 0.05, 0.05) if p.startswith("Second") else (0.1, 0.8, 0.1) for p, _ in pairs
        ]
        (j,) = judge(
            [Claim("A claim.", (("a", "First one. Second one."),))],
            model,
            THRESHOLDS,
            split_sentences,
        )
        assert (j.scores.semantic_id, j.scores.char_start, j.scores.char_end) == ("a", 11, 22)


VETOED = Thresholds(entail=0.2, contradiction=0.5, rescue=0.7, veto=0.5)


class TestContradictionVeto:
    """docs/VALIDATOR.md, rule "M": a premise that more likely contradicts does not entail."""

    CLAIM = Claim(
        "A woman who does not resist shall be regarded as consenting.",
        (
            (
                "IPC_375_10",
                "A woman who does not resist shall not by that reason alone be regarded as consenting.",
            ),
        ),
    )

    def test_a_vetoed_premise_does_not_entail_whatever_its_entailment(self) -> None:
        model = ScriptedModel({"consenting": (0.31, 0.01, 0.68)})
        (off,) = judge([self.CLAIM], model, THRESHOLDS.__class__(0.2, 0.5, 0.7), split_sentences)
        (on,) = judge([self.CLAIM], model, VETOED, split_sentences)
        assert off.outcome is Outcome.ENTAILED
        assert on.outcome is Outcome.CONTRADICTED and on.contradiction == pytest.approx(0.68)

    def test_below_the_veto_the_entail_threshold_decides_as_before(self) -> None:
        model = ScriptedModel({"consenting": (0.51, 0.01, 0.48)})
        (j,) = judge([self.CLAIM], model, VETOED, split_sentences)
        assert j.outcome is Outcome.ENTAILED

    def test_lazy_scoring_goes_past_a_vetoed_premise_to_one_that_entails(self) -> None:
        model = ScriptedModel({})
        model.predict = lambda pairs: (  # type: ignore[method-assign]
            model.calls.append(list(pairs))
            or [(0.3, 0.0, 0.7) if "theft" in p else (0.9, 0.05, 0.05) for p, _ in pairs]
        )
        passage = "Whoever commits theft is punished. Punishment follows every such act."
        (j,) = judge(
            [Claim("Theft is punished.", (("a", passage),))], model, VETOED, split_sentences
        )
        scored = [p for call in model.calls for p, _ in call]
        assert scored[0] == "Whoever commits theft is punished." and len(scored) >= 2
        assert j.outcome is Outcome.ENTAILED and j.entailment == pytest.approx(0.9)

    @pytest.mark.parametrize("seed", range(40))
    def test_lazy_scoring_gives_the_outcome_exhaustive_scoring_gives(self, seed: int) -> None:
        case = RandomCase(seed)
        claims = [
            Claim(
                case.sentence(),
                tuple(
                    (f"p{i}", " ".join(case.sentence() for _ in range(case.rng.randint(1, 4))))
                    for i in range(case.rng.randint(1, 3))
                ),
                settle_at=case.rng.choice([None, VETOED.rescue]),
            )
            for _ in range(4)
        ]
        got = judge(claims, case.model(), VETOED, split_sentences)
        for claim, j in zip(claims, got, strict=True):
            (full,) = judge([claim], case.model(), VETOED, split_sentences, lazy=False)
            assert j.outcome is full.outcome
            if j.outcome is not Outcome.ENTAILED:
                assert j.scores == full.scores
            elif claim.settle_at is not None:
                assert (j.entailment >= VETOED.rescue) == (full.entailment >= VETOED.rescue)

    def test_a_request_sets_the_veto_and_1_switches_it_off(self) -> None:
        model = ScriptedModel({"Theft": (0.35, 0.0, 0.65)})
        answer = "Theft is punishable with imprisonment of up to three years [IPC_379_0]."
        lenient = EntailmentTier(model, Thresholds(0.2, 0.5, 0.7))
        assert validate(answer, EVIDENCE, tier=lenient).accepted
        vetoing = ValidationOptions(contradiction_veto_threshold=0.5)
        assert validate(answer, EVIDENCE, vetoing, lenient).reason is Reason.CONTRADICTED
        strict = EntailmentTier(model, VETOED)
        assert validate(answer, EVIDENCE, tier=strict).reason is Reason.CONTRADICTED
        off = ValidationOptions(contradiction_veto_threshold=1.0)
        assert validate(answer, EVIDENCE, off, strict).accepted


class TestWindows:
    def test_judge_covers_a_long_passage_with_overlapping_windows(self) -> None:
        words = [f"w{i}" for i in range(100)]
        model = ScriptedModel({}, window=40)
        (j,) = judge(
            [Claim("short claim", (("a", " ".join(words)),))], model, THRESHOLDS, split_sentences
        )
        premises = [p for call in model.calls for p, _ in call]
        assert j.scores.split and len(premises) > 1
        covered = set(" ".join(premises).split())
        assert covered == set(words)  # every word judged: nothing silently truncated
        assert all(len(p.split()) + 2 + 3 <= 40 for p in premises)

    def test_judge_cuts_a_long_claim_and_needs_every_piece_entailed(self) -> None:
        claim = " ".join(f"c{i}" for i in range(60)) + " bad"
        model = ScriptedModel({"bad": (0.1, 0.8, 0.1)}, default=(0.95, 0.03, 0.02), window=64)
        (j,) = judge([Claim(claim, (("a", "Some evidence."),))], model, THRESHOLDS, split_sentences)
        hypotheses = {h for call in model.calls for _, h in call}
        assert len(hypotheses) > 1 and j.scores.split
        assert j.outcome is Outcome.NOT_ENTAILED

    def test_judge_refuses_rather_than_cuts_too_much_evidence(self) -> None:
        model = ScriptedModel({}, default=(0.99, 0.005, 0.005), window=40)
        passage = " ".join(f"w{i}" for i in range(3000))
        (j,) = judge([Claim("short claim", (("a", passage),))], model, THRESHOLDS, split_sentences)
        assert j.outcome is Outcome.NOT_ENTAILED and "limit" in j.note
        assert model.calls == []  # nothing judged on a part of the evidence


class TestValidateWithTier:
    def test_validate_rejects_a_contradicted_sentence(self) -> None:
        model = ScriptedModel({"Theft": (0.05, 0.1, 0.85)})
        report = validate(
            "Theft is punishable with imprisonment of up to three years [IPC_379_0].",
            EVIDENCE,
            tier=tier(model),
        )
        s = report.sentences[0]
        assert report.verdict is Verdict.NOT_GROUNDED and report.reason is Reason.CONTRADICTED
        assert s.decided_by is Tier.ENTAILMENT and s.entailment is not None
        assert (
            s.entailment.contradiction == pytest.approx(0.85)
            and s.entailment.semantic_id == "IPC_379_0"
        )

    def test_validate_reports_no_scores_for_a_sentence_the_model_could_not_judge(self) -> None:
        # Evidence too long for the model to read in its 64-piece limit: nothing was scored, so
        # the report carries no probabilities (it used to show neutral 1.0 as if scored).
        model = ScriptedModel({}, default=(0.99, 0.005, 0.005), window=40)
        passage = " ".join(f"w{i}" for i in range(3000))
        report = validate(
            "Words w1 and w2 appear [A_0].", [chunk("A_0", passage)], tier=tier(model)
        )

        (s,) = report.sentences
        assert s.reason is Reason.NOT_ENTAILED and "limit" in s.detail
        assert s.entailment is None and s.decided_by is Tier.ENTAILMENT
        assert model.calls == []

    def test_validate_rejects_a_sentence_the_model_does_not_entail(self) -> None:
        report = validate(
            "Theft is punishable with imprisonment of up to three years [IPC_379_0].",
            EVIDENCE,
            tier=tier(ScriptedModel({})),
        )
        assert report.reason is Reason.NOT_ENTAILED

    def test_validate_accepts_an_entailed_sentence_and_lists_the_tiers(self) -> None:
        model = ScriptedModel({"Theft": (0.95, 0.03, 0.02)})
        report = validate(
            "Theft is punishable with imprisonment of up to three years [IPC_379_0].",
            EVIDENCE,
            tier=tier(model),
        )
        assert report.verdict is Verdict.GROUNDED
        local = tuple(t for t in Tier if t is not Tier.JUDGE)
        assert report.tiers == local and report.entailment_model == "scripted"

    def test_validate_rescues_a_paraphrase_that_fails_only_coverage(self) -> None:
        answer = "Stealing can land you in jail [IPC_379_0]."
        assert validate(answer, EVIDENCE).reason is Reason.LOW_COVERAGE
        model = ScriptedModel({"Stealing": (0.9, 0.05, 0.05)})
        report = validate(answer, EVIDENCE, tier=tier(model))
        assert report.verdict is Verdict.GROUNDED
        assert report.sentences[0].decided_by is Tier.ENTAILMENT

    def test_validate_keeps_low_coverage_below_the_rescue_threshold(self) -> None:
        model = ScriptedModel({"Stealing": (0.7, 0.2, 0.1)})  # entailed, but not past 0.8
        report = validate("Stealing can land you in jail [IPC_379_0].", EVIDENCE, tier=tier(model))
        assert report.reason is Reason.LOW_COVERAGE and report.sentences[0].entailment is not None

    def test_validate_never_asks_the_model_about_a_cheap_failure(self) -> None:
        model = ScriptedModel({})
        report = validate(
            "Theft is punishable with imprisonment of up to ten years [IPC_379_0].",
            EVIDENCE,
            tier=tier(model),
        )
        assert report.reason is Reason.NUMBER_MISMATCH and model.calls == []

    def test_validate_request_thresholds_override_the_defaults(self) -> None:
        model = ScriptedModel({"Theft": (0.7, 0.2, 0.1)})
        answer = "Theft is punishable with imprisonment of up to three years [IPC_379_0]."
        assert validate(answer, EVIDENCE, tier=tier(model)).accepted
        strict = ValidationOptions(entail_threshold=0.9)
        assert validate(answer, EVIDENCE, strict, tier(model)).reason is Reason.NOT_ENTAILED

    def test_validate_without_the_tier_says_so(self) -> None:
        report = validate(
            "Theft is punishable with imprisonment of up to three years [IPC_379_0].", EVIDENCE
        )
        assert Tier.ENTAILMENT not in report.tiers and report.entailment_model == ""
        off = validate(
            "x [IPC_379_0].",
            EVIDENCE,
            ValidationOptions(check_entailment=False),
            tier(ScriptedModel({})),
        )
        assert Tier.ENTAILMENT not in off.tiers

    def test_validate_model_failure_raises_rather_than_passing(self) -> None:
        model = ScriptedModel({}, fail=True)
        with pytest.raises(ModelUnavailableError):
            validate(
                "Theft is punishable with imprisonment of up to three years [IPC_379_0].",
                EVIDENCE,
                tier=tier(model),
            )

    def test_validate_exempt_sentences_skip_the_model(self) -> None:
        model = ScriptedModel({})
        report = validate(
            "Here is the answer: Theft is punishable with up to three years [IPC_379_0].",
            EVIDENCE,
            tier=tier(model),
        )
        assert report.sentences[0].verdict in (SentenceVerdict.EXEMPT, SentenceVerdict.UNSUPPORTED)


class TestDeadline:
    """A caller that has given up costs no more model time (a security audit: a 43 KB request
    kept the validator's model busy 33 s after its caller left at 5 s)."""

    def test_no_model_call_once_the_deadline_has_passed(self) -> None:
        model = ScriptedModel({"punished": (0.9, 0.05, 0.05)})
        claims = [Claim("Theft is punished.", (("a", "Theft is punished severely."),))]
        with pytest.raises(DeadlineExceededError, match="1 sentence"):
            judge(claims, model, THRESHOLDS, split_sentences, deadline=time.monotonic() - 1)
        assert model.calls == []

    def test_a_deadline_still_ahead_changes_nothing(self) -> None:
        model = ScriptedModel({"punished": (0.9, 0.05, 0.05)})
        claims = [Claim("Theft is punished.", (("a", "Theft is punished severely."),))]
        (j,) = judge(claims, model, THRESHOLDS, split_sentences, deadline=time.monotonic() + 60)
        assert j.outcome is Outcome.ENTAILED

    def test_validate_passes_the_deadline_to_the_model(self) -> None:
        model = ScriptedModel({"punished": (0.9, 0.05, 0.05)})
        with pytest.raises(DeadlineExceededError):
            validate(
                "Theft is punishable, says the law [IPC_379_0].",
                EVIDENCE,
                tier=tier(model),
                deadline=time.monotonic() - 1,
            )
        assert model.calls == []

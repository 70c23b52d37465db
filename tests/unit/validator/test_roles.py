"""Who commits the offence: the offender a statute names, the one a claim names, and swaps.

The statute texts are the corpus's own (IPC ss. 128, 221, 332, 408, 498A; s.221 reads "pubic
servant", a typo of the source); the claims are written for these tests. The accuracy figures
come from the hand-written set in data/eval/ipc_adversarial (docs/VALIDATOR.md, rule 8a).
"""

from __future__ import annotations

import pytest

from services.common.validation import Reason, Tier, ValidationOptions, Verdict
from services.validator.engine import validate
from services.validator.roles import claim_offenders, problems, statute_roles
from tests.unit.validator.samples import chunk, ipc_text

S128, S221, S332, S408, S498A = map(ipc_text, ("128", "221", "332", "408", "498A"))


class TestStatuteRoles:
    def test_the_offender_is_read_from_the_appositive_after_whoever(self) -> None:
        roles = statute_roles(S408)
        assert roles.offenders == {"clerk", "servant"}
        assert roles.framed

    def test_a_role_named_elsewhere_is_another_party(self) -> None:
        assert statute_roles(S128).offenders == {"public servant"}
        assert statute_roles(S128).others == {"prisoner"}
        # "the husband or the relative of the husband of a woman": the woman is the victim.
        assert statute_roles(S498A).offenders == {"husband", "relative"}
        assert statute_roles(S498A).others == {"woman"}

    def test_whoever_without_being_names_no_offender_role(self) -> None:
        # "any person being a public servant" describes the victim, not the offender.
        roles = statute_roles(S332)
        assert roles.offenders == frozenset()
        assert roles.others == {"public servant"}
        assert roles.framed

    def test_every_role_who_is_a_frame(self) -> None:
        roles = statute_roles("Every man who by deceit causes any woman to believe that ...")
        assert roles.offenders == {"man"}
        assert roles.others == {"woman"}

    def test_text_without_an_offence_frame_is_not_a_statute(self) -> None:
        assert not statute_roles("The husband of the patient was a clerk in the hospital.").framed


class TestClaimOffenders:
    @pytest.mark.parametrize(
        ("claim", "expected"),
        [
            ("A wife who subjects her husband to cruelty faces three years.", {"wife"}),
            ("Husbands who subject their wives to cruelty are punished.", {"husband"}),
            (
                "The punishment applies where a master or employer commits theft.",
                {"master", "employer"},
            ),
            ("This section punishes a prisoner who escapes from custody.", {"prisoner"}),
            ("Breach of trust committed by a servant carries seven years.", {"servant"}),
        ],
    )
    def test_a_role_doing_the_act_is_the_claims_offender(
        self, claim: str, expected: set[str]
    ) -> None:
        assert claim_offenders(claim) == expected

    @pytest.mark.parametrize(
        "claim",
        [
            # The role in the who-clause suffers the act: the victim.
            "A woman who is subjected to cruelty by her husband may complain.",
            "Where a public servant is hurt in the discharge of his duty, the offence is graver.",
            # A denial is true of the wrong offender: not read.
            "A wife who subjects her husband to cruelty is not punishable under this section.",
            # The role on both sides: not read.
            "A public servant who threatens another public servant is punishable.",
            # The role is not the subject.
            "Hurting a public servant who is on duty carries three years.",
            "Anyone who assaults a public servant on duty can be imprisoned.",
        ],
    )
    def test_no_offender_is_read_where_the_claim_is_not_plain(self, claim: str) -> None:
        assert claim_offenders(claim) == frozenset()


class TestProblems:
    def test_the_counterpart_of_the_statutes_offender_is_a_swap(self) -> None:
        (problem,) = problems(
            "A wife who subjects her husband to cruelty faces up to three years.", [S498A]
        )
        assert "wife" in problem
        assert "husband or relative" in problem

    def test_a_party_the_statute_names_only_as_another_is_a_swap(self) -> None:
        (problem,) = problems(
            "A prisoner who escapes from custody faces life imprisonment.", [S128]
        )
        assert "prisoner" in problem and "public servant" in problem

    def test_the_victim_made_offender_under_whoever(self) -> None:
        (problem,) = problems("A public servant who hurts a person is punishable.", [S332])
        assert "anyone ('whoever')" in problem

    @pytest.mark.parametrize(
        ("claim", "statute"),
        [
            ("A husband or his relatives who subject a woman to cruelty face three years.", S498A),
            ("A clerk or servant who commits criminal breach of trust faces seven years.", S408),
            ("A public servant who lets a State prisoner escape faces life imprisonment.", S128),
            # "pubic servant" in the text: a public servant is a servant, so no swap.
            ("A public servant who intentionally omits to apprehend a person is punishable.", S221),
            # The statute names no role for its offender: anyone may be one.
            ("A man who hurts a public servant in the discharge of his duty is punishable.", S332),
        ],
    )
    def test_the_right_offender_passes(self, claim: str, statute: str) -> None:
        assert problems(claim, [statute]) == []

    def test_a_claim_naming_the_statutes_offender_acting_is_not_a_swap(self) -> None:
        claim = (
            "Where an employer entrusts goods to a clerk who then misappropriates them, "
            "the clerk can be jailed for seven years."
        )
        assert problems(claim, [S408]) == []

    def test_any_cited_text_that_agrees_is_enough(self) -> None:
        claim = "A master who commits breach of trust is punishable."
        assert problems(claim, [S408])
        # A second cited text without an offence frame may say anything: not decided.
        assert problems(claim, [S408, "The master kept the accounts."]) == []


def _answer(claim: str, ids: str = "IPC_498A_0") -> str:
    return f"{claim} [{ids}]"


EVIDENCE = (chunk("IPC_498A_0", S498A),)


class TestEngine:
    def test_a_role_swap_fails_its_sentence_with_role_mismatch(self) -> None:
        claim = "A wife who subjects her husband to cruelty faces up to three years and a fine."
        report = validate(_answer(claim), EVIDENCE, ValidationOptions())

        assert report.verdict is Verdict.NOT_GROUNDED
        assert report.reason is Reason.ROLE_MISMATCH
        (sentence,) = report.sentences
        assert sentence.decided_by is Tier.ROLES
        assert "wife" in sentence.detail
        assert Tier.ROLES in report.tiers

    def test_the_check_can_be_switched_off_per_request(self) -> None:
        claim = "A wife who subjects her husband to cruelty faces up to three years and a fine."
        report = validate(_answer(claim), EVIDENCE, ValidationOptions(check_roles=False))

        assert report.verdict is Verdict.GROUNDED
        assert Tier.ROLES not in report.tiers

    def test_a_quote_is_not_read_as_a_claim(self) -> None:
        report = validate(_answer(S498A), EVIDENCE, ValidationOptions())
        assert report.verdict is Verdict.GROUNDED


class TestPersonClasses:
    """A person class is not a role: only the counterpart of a class-named offender fails."""

    def test_a_woman_may_be_the_husbands_relative(self) -> None:
        claim = "A woman who subjects her daughter-in-law to cruelty can face three years."
        assert problems(claim, [S498A]) == []

    def test_whoever_includes_women(self) -> None:
        s354 = ipc_text("354")
        assert statute_roles(s354).others == {"woman"}
        assert (
            problems("A woman who assaults a girl to outrage her modesty is liable.", [s354]) == []
        )

    @pytest.mark.parametrize(
        "claim",
        [
            "A woman who consents because she was deceived into a fake marriage is protected.",
            "It is an offence even when the woman agrees to live with him.",
        ],
    )
    def test_a_person_class_acting_as_the_victim_is_not_a_swap(self, claim: str) -> None:
        # The claim names no man: the woman acts, but as the one deceived, not the deceiver.
        assert problems(claim, [ipc_text("493")]) == []

    def test_the_counterpart_of_a_class_named_offender_fails(self) -> None:
        (problem,) = problems(
            "A woman who deceives a man into believing they are married faces ten years.",
            [ipc_text("493")],
        )
        assert "woman" in problem

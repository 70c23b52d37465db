"""Permission made duty (rule 6a), and the closed-list antonyms of rule 6.

The statute texts are the IPC's; the sentences are written for these tests. The accuracy
figures come from bench.validator_accuracy, not from here.
"""

from __future__ import annotations

import pytest

from services.common.language import negation
from services.common.language.modality import duties_for_permissions
from services.common.language.text import tokenize
from services.common.validation import Reason, ValidationOptions
from services.validator.engine import validate
from tests.unit.validator.samples import chunk

S54 = (
    "In every case in which sentence of death shall have been passed, the appropriate Government "
    "may, without the consent of the offender, commute the punishment for any other punishment "
    "provided by this Code."
)
S73 = (
    "Whenever any person is convicted of an offence for which under this Code the Court has power "
    "to sentence him to rigorous imprisonment, the Court may, by its sentence, order that the "
    "offender shall be kept in solitary confinement for any portion or portions of the "
    "imprisonment to which he is sentenced, not exceeding three months in the whole."
)
S420 = (
    "Whoever cheats and thereby dishonestly induces the person deceived to deliver any property "
    "to any person, shall be punished with imprisonment of either description for a term which "
    "may extend to seven years, and shall also be liable to fine."
)


def made_duty(claim: str, evidence: str) -> list[str]:
    return duties_for_permissions(tokenize(claim), [tokenize(evidence)])


class TestPermissionMadeDuty:
    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            ("The appropriate Government must commute every death sentence.", S54),
            ("The Government is required to commute a death sentence.", S54),
            ("On such a conviction the Court must order solitary confinement.", S73),
        ],
    )
    def test_a_duty_for_a_permission_is_found(self, claim: str, evidence: str) -> None:
        assert made_duty(claim, evidence)

    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            ("The Government may commute a death sentence without the offender's consent.", S54),
            ("The Court can order solitary confinement of up to three months.", S73),
            # Penalty wording: "may extend to" is the penalty rule's.
            ("A cheat must be punished with imprisonment of up to seven years.", S420),
            ("The offender shall be punished with imprisonment of up to 7 years.", S420),
        ],
    )
    def test_a_faithful_sentence_passes(self, claim: str, evidence: str) -> None:
        assert made_duty(claim, evidence) == []

    def test_the_message_quotes_the_claims_word_not_its_stem(self) -> None:
        # The README's example once read "the claim makes 'commut' a duty ...".
        assert made_duty("The Government must commute a sentence.", S54) == [
            "the claim makes 'commute' a duty where the cited text only allows it"
        ]

    def test_validate_names_the_reason(self) -> None:
        report = validate(
            "The appropriate Government must commute a death sentence [IPC_54_0].",
            (chunk("IPC_54_0", S54),),
            ValidationOptions(),
        )
        assert report.sentences[0].reason is Reason.MODALITY_MISMATCH

    def test_the_negation_switch_turns_it_off(self) -> None:
        report = validate(
            "The appropriate Government must commute a death sentence [IPC_54_0].",
            (chunk("IPC_54_0", S54),),
            ValidationOptions(check_negation=False),
        )
        assert Reason.MODALITY_MISMATCH not in report.sentences[0].failed


class TestExceptionTurnedRound:
    S482 = (
        "Whoever makes use of any such false mark in any manner prohibited by the last foregoing "
        "section shall, unless he proves that he acted without intent to defraud, be punished."
    )

    def test_an_exception_made_a_concession_is_found(self) -> None:
        claim = "He is punished even if he proves that he acted without intent to defraud."
        assert negation.exceptions_reversed(tokenize(claim), [tokenize(self.S482)])

    def test_the_message_quotes_the_claims_words(self) -> None:
        claim = "He is punished even if he proves that he acted without intent to defraud."
        assert negation.exceptions_reversed(tokenize(claim), [tokenize(self.S482)]) == [
            "the claim concedes 'proves acted intent defraud' where the cited evidence makes it "
            "an exception ('unless')"
        ]

    def test_the_exception_restated_passes(self) -> None:
        claim = "He is punished except where he proves that he acted without intent to defraud."
        assert negation.exceptions_reversed(tokenize(claim), [tokenize(self.S482)]) == []

    def test_a_concession_about_other_terms_passes(self) -> None:
        claim = "He is punished even if the mark was made by someone else."
        assert negation.exceptions_reversed(tokenize(claim), [tokenize(self.S482)]) == []


def antonyms(claim: str, evidence: str) -> list[str]:
    return negation.lexical_antonyms(tokenize(claim), [tokenize(evidence)])


class TestClosedListAntonyms:
    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            (
                "He is punished for the offence carrying the highest punishment.",
                "The offender shall be punished for the offence for which the lowest punishment "
                "is provided.",
            ),
            (
                "Movable property includes corporeal property of every description, including "
                "land.",
                "The words movable property are intended to include corporeal property of every "
                "description, except land and things attached to the earth.",
            ),
            (
                "The word animal denotes any living creature, a human being included.",
                "The word animal denotes any living creature, other than a human being.",
            ),
            (
                "Culpable homicide is murder only in the cases that are expressly excepted.",
                "Except in the cases hereinafter excepted, culpable homicide is murder.",
            ),
        ],
    )
    def test_an_antonym_is_found(self, claim: str, evidence: str) -> None:
        assert antonyms(claim, evidence)

    def test_an_inclusion_message_quotes_the_claims_words(self) -> None:
        found = antonyms(
            "Movable property includes corporeal property of every description, including houses.",
            "The words movable property are intended to include corporeal property of every "
            "description, except houses and things attached to the earth.",
        )
        assert found == ["the claim says 'including' houses where the cited evidence excludes it"]

    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            (
                "Movable property means corporeal property of every kind other than land.",
                "The words movable property are intended to include corporeal property of every "
                "description, except land and things attached to the earth.",
            ),
            (
                "Fraud is punishable with fine only.",
                "Whoever commits fraud, except on a bank, shall be punished with fine only.",
            ),
            (
                "The minimum term is one year and the maximum five years.",
                "imprisonment for a term which shall not be less than one year but which may "
                "extend to five years (the minimum and the maximum)",
            ),
        ],
    )
    def test_a_faithful_sentence_passes(self, claim: str, evidence: str) -> None:
        assert antonyms(claim, evidence) == []

"""Penalties parsed from statute text and claims, and the misstatements the parser catches.

The claims here are written for these tests; the accuracy figures come from the hand-written
set in data/eval/ipc_adversarial, which these rules were not written from.
"""

from __future__ import annotations

import pytest

from services.common.language.sentences import split_sentences
from services.validator.penalty import (
    Description,
    FineMode,
    parse_claim,
    parse_evidence,
    problems,
)

S420 = (
    "Whoever cheats and thereby dishonestly induces the person deceived to deliver any property "
    "to any person, shall be punished with imprisonment of either description for a term which "
    "may extend to seven years, and shall also be liable to fine."
)
S160 = (
    "Whoever commits an affray, shall be punished with imprisonment of either description for a "
    "term which may extend to one month, or with fine which may extend to one hundred rupees, or "
    "with both."
)
S302 = (
    "Whoever commits murder shall be punished with death, or imprisonment for life, and shall "
    "also be liable to fine."
)
S354 = (
    "Whoever assaults any woman, intending to outrage her modesty, shall be punished with "
    "imprisonment of either description for a term which shall not be less than one year but "
    "which may extend to five years, and shall also be liable to fine."
)
S308 = (
    "Whoever does any act with such intention shall be punished with imprisonment of either "
    "description for a term which may extend to three years, or with fine, or with both; and, if "
    "hurt is caused to any person by such act, shall be punished with imprisonment of either "
    "description for a term which may extend to seven years, or with fine, or with both."
)
S509 = (
    "Whoever, intending to insult the modesty of any woman, utters any word, shall be punished "
    "with simple imprisonment for a term which may extend to three years, and also with fine."
)


def misstated(claim: str, evidence: str) -> list[str]:
    stated = parse_claim(claim)
    assert stated is not None, claim
    return problems(stated, parse_evidence(evidence))


class TestParseEvidence:
    def test_parse_evidence_reads_kind_term_and_fine(self) -> None:
        (clause,) = parse_evidence(S420)
        assert clause.imprisonment and not clause.death and not clause.life
        assert clause.description is Description.EITHER
        assert clause.bound("max") == 84
        assert clause.fine_mode is FineMode.CUMULATIVE

    def test_parse_evidence_reads_an_alternative_fine_or_both(self) -> None:
        (clause,) = parse_evidence(S160)
        assert clause.fine_mode is FineMode.ALTERNATIVE and clause.either_or_both
        assert clause.bound("max") == 1

    def test_parse_evidence_splits_aggravated_clauses(self) -> None:
        basic, aggravated = parse_evidence(S308)
        assert (basic.bound("max"), aggravated.bound("max")) == (36, 84)

    def test_parse_evidence_reads_minimum_and_maximum(self) -> None:
        (clause,) = parse_evidence(S354)
        assert (clause.bound("min"), clause.bound("max")) == (12, 60)

    def test_parse_evidence_reads_words_with_footnote_digits(self) -> None:
        (clause,) = parse_evidence(S509)
        assert clause.fine and clause.description is Description.SIMPLE

    def test_parse_evidence_reads_not_exceeding_as_a_maximum(self) -> None:
        (clause,) = parse_evidence(
            "shall be punished with imprisonment for life, or with imprisonment of either "
            "description for a term not exceeding ten years, and shall also be liable to fine."
        )
        assert clause.bound("max") == 120 and clause.bound("min") is None

    @pytest.mark.parametrize(
        ("claim", "bound"),
        [
            ("It is punishable with no more than twelve months in prison.", "max"),
            ("It is punishable with a prison term not exceeding one year.", "max"),
            ("It is punishable with more than twelve months in prison.", "min"),
            ("It is punishable with imprisonment exceeding one year.", "min"),
        ],
    )
    def test_parse_claim_reads_a_negated_comparative_as_a_maximum(
        self, claim: str, bound: str
    ) -> None:
        stated = parse_claim(claim)
        assert stated is not None and [t.bound for t in stated.terms] == [bound]

    def test_parse_evidence_reads_and_with_fine_as_mandatory(self) -> None:
        # "and also with fine" puts the fine in the sentence; "liable to fine" only allows it.
        (clause,) = parse_evidence(S509)
        assert clause.fine_mode is FineMode.MANDATORY
        (clause,) = parse_evidence(S420)
        assert clause.fine_mode is FineMode.CUMULATIVE


class TestFaithfulClaims:
    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            ("Cheating is punishable with imprisonment of up to seven years and a fine.", S420),
            ("Cheating can lead to a jail term of a maximum of 7 years.", S420),
            ("Cheating attracts a fine.", S420),
            (
                "Affray is punishable with imprisonment of up to one month, or a fine, or both.",
                S160,
            ),
            ("Murder is punishable with death or life imprisonment, and a fine.", S302),
            ("Murder is punishable with imprisonment for life.", S302),
            ("Assaulting a woman to outrage her modesty carries 1 to 5 years' imprisonment.", S354),
            ("The offence carries at least one year in prison.", S354),
            ("It is punishable with up to 3 years, or up to 7 years if hurt is caused.", S308),
            ("Causing death by negligence is punishable with up to seven years in prison.", S420),
            (
                "Insulting a woman's modesty is punishable with simple imprisonment and a fine.",
                S509,
            ),
            ("The offender must also pay a fine.", S509),
            ("The fine is optional, and the jail term is up to seven years.", S420),
            ("A judge may or may not add a fine to the prison term for cheating.", S420),
        ],
    )
    def test_problems_accepts_a_faithful_claim(self, claim: str, evidence: str) -> None:
        assert misstated(claim, evidence) == []


class TestMisstatedClaims:
    @pytest.mark.parametrize(
        ("claim", "evidence", "expected"),
        [
            (
                "Cheating is punishable with imprisonment for at least seven years.",
                S420,
                "not a minimum",
            ),
            ("Cheating carries seven years in prison.", S420, "fixed term"),
            (
                "Cheating is punishable with rigorous imprisonment for up to seven years.",
                S420,
                "rigorous",
            ),
            ("Cheating is punishable with death.", S420, "death"),
            (
                "Cheating is punishable with imprisonment of up to seven years or a fine.",
                S420,
                "not an alternative",
            ),
            ("The offender must pay a fine.", S420, "not mandatory"),
            (
                "Affray is punishable with imprisonment of up to one month and a fine.",
                S160,
                "not an addition",
            ),
            ("Murder is punishable with imprisonment for up to ten years.", S302, "no term"),
            ("The offence carries up to one year in prison.", S354, "maximum is 5 years"),
            (
                "Insulting a woman's modesty is punishable with rigorous imprisonment.",
                S509,
                "rigorous",
            ),
            ("Cheating is punishable with a fine only.", S420, "not a fine alone"),
            (
                "For insulting a woman's modesty the fine is optional.",
                S509,
                "not optional",
            ),
            (
                "The court may decide whether or not to add a fine to the simple imprisonment.",
                S509,
                "not optional",
            ),
            ("A fine need not be imposed along with the jail term.", S509, "not optional"),
        ],
    )
    def test_problems_names_the_misstatement(
        self, claim: str, evidence: str, expected: str
    ) -> None:
        found = misstated(claim, evidence)
        assert found and any(expected in p for p in found), found


class TestScope:
    def test_parse_claim_ignores_a_claim_without_penalty_words(self) -> None:
        assert parse_claim("Theft means moving movable property dishonestly.") is None

    def test_parse_claim_treats_an_age_as_no_term(self) -> None:
        stated = parse_claim("A child under seven years of age cannot be punished.")
        assert stated is None or not stated.terms

    def test_parse_claim_ignores_death_in_the_offence_description(self) -> None:
        stated = parse_claim("Causing death by a rash act is punishable with imprisonment.")
        assert stated is not None and not stated.death

    def test_parse_claim_skips_a_named_offences_penalty(self) -> None:
        claim = (
            "A party to a conspiracy to commit an offence punishable with death, imprisonment for "
            "life or rigorous imprisonment for two years, shall be punished as an abettor."
        )
        assert parse_claim(claim) is None

    def test_problems_is_empty_without_a_cited_penalty(self) -> None:
        stated = parse_claim("Theft is punishable with death.")
        assert stated is not None
        assert problems(stated, parse_evidence("Theft means moving property.")) == []


class TestQuotes:
    @pytest.mark.parametrize("section", ["303", "392", "67"])
    def test_validate_never_flags_a_verbatim_quote_of_its_cited_section(self, section: str) -> None:
        from services.common.validation import Verdict
        from services.validator.engine import validate
        from tests.unit.validator.samples import ipc

        cited = ipc(section)
        for sentence in split_sentences(cited.text):
            text = cited.text[sentence[0] : sentence[1]].rstrip(" .")
            report = validate(f"{text} [{cited.semantic_id}].", [cited])
            assert report.verdict is Verdict.GROUNDED, (text, report.sentences[0].detail)

"""Negation: negated bounds, and cues deleted, replaced or inserted between claim and evidence."""

from __future__ import annotations

import pytest

from services.common.language import negation
from services.validator.coverage import analyse


def edits(claim: str, *evidence: str) -> list[str]:
    c = analyse(claim)
    cited = [analyse(text, evidence=True) for text in evidence]
    return negation.edits(c.tokens, c.negations, [(e.tokens, e.negations) for e in cited])


def mismatches(claim: str, evidence: str) -> list[str]:
    c, e = analyse(claim), analyse(evidence, evidence=True)
    return negation.mismatches(
        c.negations,
        c.clauses,
        frozenset(t.norm for t in c.tokens),
        e.negations,
        e.clauses,
        evidence_words=frozenset(t.norm for t in e.tokens),
        evidence_implicit=negation.implicit_terms(e.tokens),
        claim_implicit=negation.implicit_terms(c.tokens),
    )


class TestMessages:
    """Messages quote the words as written (lower-cased), not the stems the rules compare."""

    def test_a_claim_negation_is_quoted_from_its_cue_to_its_last_term(self) -> None:
        assert mismatches(
            "Whoever commits theft shall never be punished with imprisonment.",
            "Whoever commits theft shall be punished with imprisonment.",
        ) == [
            "claim says 'never be punished with imprisonment' but the cited evidence has no "
            "matching negation"
        ]

    def test_an_evidence_negation_names_the_word_the_claim_states(self) -> None:
        assert mismatches(
            "Children under seven years of age are punished for offences.",
            "Nothing is an offence which is done by a child under seven years of age.",
        ) == [
            "evidence says 'nothing is an offence which is done by a child' but the claim states "
            "offence without negation"
        ]

    def test_a_negated_bound_is_quoted_whole(self) -> None:
        c = analyse("It shall not be less than seven years.")
        assert [(s.text, s.words) for s in c.negations] == [("not be less than", ("less",))]


class TestBounds:
    def test_mismatches_rejects_a_bound_whose_negation_was_dropped(self) -> None:
        found = mismatches(
            "imprisonment for a term exceeding ten years",
            "imprisonment for a term not exceeding ten years",
        )

        assert found
        assert "exceed" in found[0]

    @pytest.mark.parametrize(
        "claim",
        [
            "imprisonment for a term of at least seven years",
            "imprisonment for a term not less than seven years",
        ],
    )
    def test_mismatches_accepts_a_bound_stated_the_same_way(self, claim: str) -> None:
        assert mismatches(claim, "imprisonment for a term not less than seven years") == []

    @pytest.mark.parametrize(
        ("claim", "agrees"),
        [
            ("the imprisonment shall be at least 7 years", True),
            ("he cannot be imprisoned for less than seven years", True),
            ("the imprisonment shall be less than seven years", False),
        ],
    )
    def test_mismatches_reads_the_statutes_not_be_less_than(self, claim: str, agrees: bool) -> None:
        evidence = "the imprisonment of such offender shall not be less than seven years"
        assert (mismatches(claim, evidence) == []) is agrees


class TestEdits:
    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            # "art" and "more" are stop words: the term-based check cannot see these.
            (
                "compared to a counterfactual scenario in which there is ART",
                "compared to a counterfactual scenario in which there is no ART",
            ),
            (
                "the lead singer of the alternative metal band Faith More",
                "the lead singer of the alternative metal band Faith No More",
            ),
            (
                "improvements compared with usual care with training",
                "improvements compared with usual care without training",
            ),
            (
                "lower in those with (5.72%) vs those with (6.01%) SCT",
                "lower in those with (5.72%) vs those without (6.01%) SCT",
            ),
        ],
    )
    def test_edits_finds_a_cue_deleted_or_replaced(self, claim: str, evidence: str) -> None:
        assert edits(claim, evidence)

    def test_edits_finds_a_cue_inserted_where_a_title_holds_another_cue(self) -> None:
        found = edits(
            "Nobody for Everybody is not the Japanese debut EP by Wonder Girls",
            "Nobody for Everybody is the Japanese debut EP by Wonder Girls",
        )

        assert found == [
            "the claim has 'everybody is not the japanese' where the cited evidence has "
            "'everybody is the japanese'"
        ]

    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            ("There is no ART in the control arm", "There is no ART in the control arm"),
            ("There were zero deaths in the trial arm", "There were no deaths in the trial arm"),
            # The evidence itself writes both forms.
            (
                "if the term shall not exceed six months; two months if the term shall exceed "
                "six months",
                "if the term shall not exceed six months; two months if the term shall exceed "
                "six months",
            ),
            # The claim keeps only the negated one of the two.
            (
                "a time not exceeding one month if the term shall not exceed six months",
                "a time not exceeding one month if the term shall not exceed six months; two "
                "months if the term shall exceed six months",
            ),
            # Swapped numbers must not make "with aura (1.23)" look like "without aura (1.23)".
            (
                "people with aura (1.23, 1.53 to 3.03) compared with people without aura (2.16)",
                "people with aura (2.16, 1.53 to 3.03) compared with people without aura (1.23)",
            ),
        ],
    )
    def test_edits_accepts_text_that_keeps_the_negation(self, claim: str, evidence: str) -> None:
        assert edits(claim, evidence) == []

    def test_edits_leaves_a_cue_that_opens_the_text_to_the_term_check(self) -> None:
        claim, evidence = "Deaths occurred in the trial", "No deaths occurred in the trial"

        assert edits(claim, evidence) == []
        assert mismatches(claim, evidence)


def antonyms(claim: str, *evidence: str) -> list[str]:
    return negation.antonyms(
        analyse(claim).tokens, [analyse(e, evidence=True).tokens for e in evidence]
    )


class TestPrefixAntonyms:
    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            ("Whoever lawfully compels a person to labour", "Whoever unlawfully compels a person"),
            ("Someone who unknowingly counterfeits coin", "Whoever knowingly counterfeits coin"),
            ("A person who dishonestly keeps property", "A person who honestly keeps property"),
            ("an illegal act of the servant", "a legal act of the servant"),
        ],
    )
    def test_antonyms_finds_a_word_negated_by_its_prefix(self, claim: str, evidence: str) -> None:
        assert antonyms(claim, evidence)

    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            # Ordinary words that merely start like a negative prefix.
            ("He shall inform the police", "He shall fill in the form"),
            ("The court may discharge the accused", "The accused was charged"),
            # Either side holding both forms (or the base in another form) disagrees with nothing.
            ("from unstable to stable attachments", "stable attachments form"),
            ("give rise to differentiated progeny", "remain undifferentiated and differentiate"),
            # The same word on both sides.
            ("Whoever unlawfully compels", "Whoever unlawfully compels"),
        ],
    )
    def test_antonyms_leaves_other_words_alone(self, claim: str, evidence: str) -> None:
        assert antonyms(claim, evidence) == []


class TestPhraseCues:
    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            (
                "Assaulting him without grave and sudden provocation is punished",
                "Whoever assaults him, otherwise than on grave and sudden provocation, is punished",
            ),
            (
                "it is no longer stolen property",
                "it then ceases to be stolen property",
            ),
        ],
    )
    def test_two_word_cues_match_a_plain_negation(self, claim: str, evidence: str) -> None:
        assert mismatches(claim, evidence) == []

    def test_within_or_without_is_no_negation(self) -> None:
        assert analyse("Whoever within or without India conspires", evidence=True).negations == ()
        assert (
            mismatches(
                "a conspiracy inside or outside India", "Whoever within or without India conspires"
            )
            == []
        )
        assert mismatches("Whoever conspires without India", "Whoever within India conspires")


class TestBoundsInOtherWords:
    """A claim's negated bound agrees with the same bound in other words (rule 742a6d6, F1)."""

    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            (
                "imprisonment for no more than 14 years",
                "imprisonment for a term not exceeding fourteen years",
            ),
            (
                "a fine of no more than two hundred rupees",
                "with fine which may extend to two hundred rupees",
            ),
            ("a term no longer than three months", "a term which may extend to three months"),
        ],
    )
    def test_mismatches_accepts_a_negated_bound_said_another_way(
        self, claim: str, evidence: str
    ) -> None:
        assert mismatches(claim, evidence) == []

    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            # A maximum for a minimum.
            ("a term of not more than seven years", "a term not less than seven years"),
            # "more than" unnegated in the evidence: the claim's negation turns it round.
            ("a term of not more than ten years", "a term of more than ten years"),
        ],
    )
    def test_mismatches_rejects_a_negated_bound_the_other_way(
        self, claim: str, evidence: str
    ) -> None:
        assert mismatches(claim, evidence)


class TestNegationWithoutCue:
    """Words that negate without a cue back a negation on the other side (rule 98ff21e, F3')."""

    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            (
                "An animal is any living creature that is not a human being.",
                "The word animal denotes any living creature, other than a human being.",
            ),
            (
                "Imprisonment for not paying the fine must be simple.",
                "The imprisonment imposed in default of payment of the fine shall be simple.",
            ),
            (
                "A company counts as a person even if it is not incorporated.",
                "The word person includes any Company, whether incorporated or not.",
            ),
            (
                "A public servant whom the law forbids to trade is punishable if he trades.",
                "Whoever, being a public servant, and being legally bound as such public servant "
                "not to engage in trade, engages in trade, shall be punished.",
            ),
            (
                "Membership of a wandering gang that lives by theft, other than a gang of thugs, "
                "is punishable.",
                "Whoever belongs to any wandering gang of persons associated for the purpose of "
                "habitually committing theft, and not being a gang of thugs, shall be punished.",
            ),
        ],
    )
    def test_mismatches_accepts_a_negation_said_without_a_cue(
        self, claim: str, evidence: str
    ) -> None:
        assert mismatches(claim, evidence) == []

    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            # "any other person" negates nothing: only "other than" does.
            (
                "Only the person who caused hurt, and not others jointly concerned, is liable.",
                "Such person, and any other person jointly concerned, shall be punished.",
            ),
            # A cue-less word governs only its own clause.
            (
                "Spoken words cannot defame anyone.",
                "Whoever by words spoken makes any imputation is said, except in the cases "
                "hereinafter excepted, to defame that person.",
            ),
        ],
    )
    def test_mismatches_still_rejects_a_negation_with_no_backing(
        self, claim: str, evidence: str
    ) -> None:
        assert mismatches(claim, evidence)


class TestScopeBound:
    """A scope reads a bounded number of tokens (linear time on "no no no ..."); a claim cue
    that finds no term within the bound fails rather than negate nothing (a review got a
    negated claim past the cheap tiers by padding 28 stop words after "not")."""

    EVIDENCE = "Whoever commits theft shall be punished with imprisonment for three years."

    def test_a_padded_negation_is_a_mismatch(self) -> None:
        claim = "Theft is not " + "of the and a to or in " * 4 + "punishable."
        (problem,) = mismatches(claim, self.EVIDENCE)
        assert "no word it negates follows within 24 words" in problem

    def test_a_negation_followed_by_nothing_at_the_end_is_not_cut(self) -> None:
        """The bound cuts a scope only when tokens remain; a sentence that simply ends after
        its cue is read whole, as before."""
        (scope,) = analyse("Theft is punished, or not").negations
        assert not scope.cut

    def test_an_ordinary_negation_is_read_whole(self) -> None:
        (scope,) = analyse("Theft is not punishable with death.").negations
        assert scope.terms == ("punish", "die") and not scope.cut

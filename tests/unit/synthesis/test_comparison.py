"""Comparison questions: finding the compared terms and ranking evidence for each."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from services.common.evidence import Chunk
from services.common.intent import Intent, classify_intent
from services.synthesis.comparison import find_comparison, interleave
from tests.unit.synthesis.fakes import scored


class TestFindComparison:
    @pytest.mark.parametrize(
        ("question", "terms"),
        [
            ("What is the difference between theft and extortion?", ("theft", "extortion")),
            ("What are the differences between the theft and an extortion", ("theft", "extortion")),
            (
                "How does wrongful confinement differ from wrongful restraint?",
                ("wrongful confinement", "wrongful restraint"),
            ),
            ("Distinguish kidnapping from abduction.", ("kidnapping", "abduction")),
            ("Compare assault with criminal force", ("assault", "criminal force")),
            ("theft vs. extortion?", ("theft", "extortion")),
            ("Murder versus culpable homicide", ("Murder", "culpable homicide")),
            # Choices between two named things (HotpotQA's comparison questions).
            ("Which is older, the Eiffel Tower or Big Ben?", ("Eiffel Tower", "Big Ben")),
            (
                "Who was born first, Morgan Llywelyn or Robert Jordan ?",
                ("Morgan Llywelyn", "Robert Jordan"),
            ),
            ("Are Cryptanthus and Gagea, both a genus?", ("Cryptanthus", "Gagea")),
            # rule AM: a colon before the choice; "Are (both) X and Y ..." with names
            ("Which genus has more species: Sarracenia or Butea?", ("Sarracenia", "Butea")),
            ("Are both Trace Cyrus and Jizzy Pearl vocalists?", ("Trace Cyrus", "Jizzy Pearl")),
            (
                "Were Scott Derrickson and Ed Wood of the same nationality?",
                ("Scott Derrickson", "Ed Wood"),
            ),
            # rule AY: a choice between two offences by gravity, in lower case
            (
                "Which is punished more severely, theft or criminal breach of trust?",
                ("theft", "criminal breach of trust"),
            ),
            ("Is kidnapping or abduction the graver offence?", ("kidnapping", "abduction")),
            (
                "Which offence carries a heavier sentence: extortion or robbery?",
                ("extortion", "robbery"),
            ),
            (
                # The aspect ("punishments for") is said once but applies to both terms.
                "How do the punishments for voluntarily causing hurt and grievous hurt compare?",
                ("voluntarily causing hurt", "grievous hurt"),
            ),
        ],
    )
    def test_finds_the_compared_terms_in_order(self, question: str, terms: tuple[str, str]) -> None:
        found = find_comparison(question, classify_intent(question))

        assert found is not None
        assert found.terms == terms
        assert found.focus == " and ".join(terms)

    @pytest.mark.parametrize(
        "question",
        [
            "What is theft?",
            "What is criminal conspiracy and how is it punished?",  # compound, not a comparison
            "When does robbery become dacoity?",
            # A choice between things that are not names is no comparison of two things.
            "Is it legal, or illegal to carry a knife?",
            "What is the punishment for theft, robbery or extortion?",
            "Which is older, the tower or the bridge?",
            # rule AY reads gravity only, and "Is X or Y the ...?" only
            "Which is older, rum or whisky?",
            "Is theft or robbery more serious?",
            # rule AM: not names, or no lower-case word after the second name
            "Are theft and robbery bailable?",
            "Section 302: murder or culpable homicide?",
            "Were Scott Derrickson and Ed Wood?",
            "What is the difference between theft and theft?",  # nothing to compare
            "What is the difference between the?",
            # Terms longer than six words: the pattern matched a sentence, not two terms.
            "Is there a difference between a person who takes property without any consent at "
            "all and one who takes it by putting the owner in fear of injury?",
        ],
    )
    def test_other_questions_are_no_comparison(self, question: str) -> None:
        assert find_comparison(question, classify_intent(question)) is None

    @pytest.mark.parametrize(
        ("intent", "queries"),
        [
            (Intent.DEFINITION, ("What is theft?", "What is extortion?")),
            (
                Intent.PUNISHMENT,
                ("What is the punishment for theft?", "What is the punishment for extortion?"),
            ),
        ],
    )
    def test_each_term_gets_a_query_in_the_asked_aspect(
        self, intent: Intent, queries: tuple[str, str]
    ) -> None:
        found = find_comparison("theft vs extortion", intent)

        assert found is not None and found.queries == queries


class TestInterleave:
    def test_sections_titled_with_the_term_lead_each_term_and_the_terms_take_turns(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # Retrieval ranks s.390 (Robbery) first for "What is theft?": it names theft thrice.
        theft = scored(ipc, "IPC_390_0", "IPC_382_0", "IPC_378_0", "IPC_379_0")
        extortion = scored(ipc, "IPC_390_0", "IPC_384_0", "IPC_383_0")
        question = scored(ipc, "IPC_390_0", "IPC_390_1")

        merged = interleave([theft, extortion], ["theft", "extortion"], question, Intent.DEFINITION)

        ids = [s.chunk.semantic_id for s in merged]
        # Theft (s.378) then Extortion (s.383, before "Punishment for extortion"), then the
        # whole question's best; duplicates are left for the pipeline's dedupe.
        assert ids[:3] == ["IPC_378_0", "IPC_383_0", "IPC_390_0"]
        assert ids.index("IPC_383_0") < ids.index("IPC_384_0")

    def test_a_punishment_comparison_leads_with_the_punishment_sections(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        extortion = scored(ipc, "IPC_390_0", "IPC_383_0", "IPC_384_0")

        merged = interleave([extortion], ["extortion"], (), Intent.PUNISHMENT)

        assert [s.chunk.semantic_id for s in merged][:2] == ["IPC_384_0", "IPC_383_0"]

    def test_a_term_naming_a_section_leads_with_that_section(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # By title, "Punishment for murder" went last for a question that asks no punishment,
        # behind s.50 ("Section"), and out of the evidence ("Then O", docs/EVALUATION.md).
        s302 = scored(ipc, "IPC_50_0", "IPC_376C_1", "IPC_302_0")
        s304 = scored(ipc, "IPC_304_0", "IPC_50_0")

        merged = interleave([s302, s304], ["section 302", "section 304"], (), Intent.GENERAL)

        assert [s.chunk.semantic_id for s in merged][:2] == ["IPC_302_0", "IPC_304_0"]


class TestAnswerTerms:
    @pytest.mark.parametrize(
        ("question", "terms", "sections"),
        [
            ("What is the difference between section 299 and section 300?", (), ("299", "300")),
            ("compare sections 323 and 325 IPC", (), ("323", "325")),
            ("How does section 302 differ from section 304?", (), ("302", "304")),
            ("What is the difference between theft and extortion?", ("theft", "extort"), ()),
        ],
    )
    def test_the_comparison_word_is_no_answer_term(
        self, question: str, terms: tuple[str, ...], sections: tuple[str, ...]
    ) -> None:
        found = find_comparison(question, classify_intent(question))

        assert found is not None
        assert (found.answer_terms.terms, found.answer_terms.sections) == (terms, sections)

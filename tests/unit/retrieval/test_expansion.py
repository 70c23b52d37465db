"""Tests for query analysis: named provisions, intent expansions and feedback terms."""

from __future__ import annotations

import pytest

from services.common.intent import CLASSIFY_ORDER, PROFILES, Intent
from services.common.language.references import SectionRef, parse_section_refs
from services.retrieval.expansion import (
    analyse_query,
    feedback_query,
    feedback_terms,
    rule_expansions,
)


class TestParseSectionRefs:
    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            ("What is section 420?", [("420", None)]),
            ("punishment under s. 302 IPC", [("302", "IPC")]),
            ("sec 498A of the Indian Penal Code", [("498A", "IPC")]),
            ("section 498-A", [("498A", None)]),
            ("Article 21A", [("21A", "COI")]),
            ("art. 14 equality", [("14", "COI")]),
            ("u/s 379", [("379", None)]),
            ("arrested u/s 379 IPC", [("379", "IPC")]),
            ("ss. 299 and 300 IPC", [("299", "IPC"), ("300", "IPC")]),
            ("302 IPC", [("302", "IPC")]),
            ("IPC 420 cheating", [("420", "IPC")]),
            ("420 of the IPC", [("420", "IPC")]),
            ("section 420 (IPC)", [("420", "IPC")]),
            ("section 154 CrPC and section 420 IPC", [("154", "CRPC"), ("420", "IPC")]),
            ("IPC section 420 and CrPC section 154", [("420", "IPC"), ("154", "CRPC")]),
            ("Article 21 of the Constitution of India", [("21", "COI")]),
            (
                "sections 3, 4 and 5 of the Hindu Marriage Act",
                [("3", "HMA"), ("4", "HMA"), ("5", "HMA")],
            ),
            ("section 420 and section 420 again", [("420", None)]),
            # A provision number asked alone is a section reference.
            ("420", [("420", None)]),
            ("498A", [("498A", None)]),
            ("498-A", [("498A", None)]),
            (" 379? ", [("379", None)]),
            ("§ 420", [("420", None)]),
        ],
    )
    def test_parse_section_refs_reads_provisions(
        self, query: str, expected: list[tuple[str, str | None]]
    ) -> None:
        assert parse_section_refs(query) == tuple(SectionRef(s, a) for s, a in expected)

    @pytest.mark.parametrize(
        "query",
        [
            "imprisonment for 3 years",
            "i.e. a person within 2 years",
            "What is the punishment for theft?",
            "Mrs. 5 things",
            "420 and 421",  # a list of numbers is not one provision asked for
            "What is 420?",  # only the whole query, never a number inside a sentence
            "3 years",
            "1st",  # an ordinal alone is not section 1ST
            "10th?",
            "2ND",
        ],
    )
    def test_parse_section_refs_ignores_bare_numbers(self, query: str) -> None:
        assert parse_section_refs(query) == ()


class TestAnalyseQuery:
    def test_analyse_query_combines_intent_refs_and_terms(self) -> None:
        analysis = analyse_query("What is the punishment for theft under section 379 IPC?")
        assert analysis.intent is Intent.PUNISHMENT
        assert analysis.section_refs == (SectionRef("379", "IPC"),)
        assert analysis.terms == ("what", "punish", "theft", "under", "sect", "379", "ipc")

    def test_analyse_query_reads_past_invisible_format_marks(self) -> None:
        plain = analyse_query("What is theft under section 379?")
        marked = analyse_query("\u202eWhat is theft under section\u200b 379?")
        assert (marked.intent, marked.section_refs, marked.terms) == (
            plain.intent,
            plain.section_refs,
            plain.terms,
        )


class TestRuleExpansions:
    def test_rule_expansions_punishment_adds_sentencing_words(self) -> None:
        expanded = rule_expansions(analyse_query("What is the punishment for theft?"))
        assert expanded == ["What is the punishment for theft? punished with imprisonment fine"]

    def test_rule_expansions_definition_adds_defining_words(self) -> None:
        assert rule_expansions(analyse_query("What is theft?")) == [
            "What is theft? means is said to"
        ]

    def test_rule_expansions_general_adds_nothing(self) -> None:
        assert rule_expansions(analyse_query("cognizable offence information police")) == []

    def test_one_profile_per_intent_and_every_intent_classified(self) -> None:
        assert set(PROFILES) == set(Intent) == set(CLASSIFY_ORDER)
        assert all(PROFILES[i].intent is i for i in Intent)
        # A kind of answer with language to require has phrasing to expand and rerank with.
        for profile in PROFILES.values():
            if profile.answer_language is not None:
                assert profile.expansions and profile.rerank_cues


class TestFeedbackTerms:
    def test_feedback_terms_picks_shared_new_words_in_surface_form(self) -> None:
        texts = [
            "Whoever commits theft shall be punished with imprisonment.",
            "Theft is punished with imprisonment or fine.",
            "Robbery is an aggravated form.",
        ]
        terms = feedback_terms(["theft"], texts, lambda _: 1.0, n_terms=5)
        # Equal weights tie-break alphabetically on the stem ("imprison" < "punish").
        assert terms == ["imprisonment", "punished"]

    def test_feedback_terms_weights_by_idf(self) -> None:
        texts = ["alpha beta", "alpha beta"]
        idf = {"alpha": 0.1, "beta": 2.0}
        assert feedback_terms([], texts, lambda t: idf.get(t, 0.0), n_terms=1) == ["beta"]

    def test_feedback_terms_skips_numbers_and_zero_idf(self) -> None:
        assert feedback_terms([], ["420 zeta", "420 zeta"], lambda _: 0.0) == []

    def test_feedback_terms_off_when_no_terms_or_texts(self) -> None:
        assert feedback_terms([], ["alpha"], lambda _: 1.0, n_terms=0) == []
        assert feedback_terms([], [], lambda _: 1.0) == []

    def test_feedback_query_appends_terms(self) -> None:
        assert feedback_query("theft", ["punished", "fine"]) == "theft punished fine"
        assert feedback_query("theft", []) is None


class TestDefinedTerm:
    """The term a definition question asks about, as sufficiency's key terms read it."""

    @pytest.mark.parametrize(
        ("query", "term"),
        [
            ("What is a document?", {"docu"}),
            ("Who is a public servant?", {"public", "serv"}),
            ("Define theft.", {"theft"}),
            ("What is the punishment for theft?", set()),  # not a definition
            ("What is section 420?", set()),  # names a provision
            ("Tell me about theft", {"theft"}),  # a request asks "What is theft?" (rule BD)
            ("Tell me how theft is punished", set()),  # ... or the question it embeds
        ],
    )
    def test_only_a_definition_question_has_one(self, query: str, term: set[str]) -> None:
        assert analyse_query(query).defined_term == frozenset(term)

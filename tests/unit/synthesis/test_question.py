"""QuestionAnalysis: the question analysed once per request, and what each stage reads of it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from services.common.evidence import Chunk
from services.common.intent import Intent
from services.common.language.text import normalise_query
from services.synthesis import extractive, question, sufficiency
from services.synthesis.extractive import ExtractiveGenerator
from services.synthesis.generation import Turn
from services.synthesis.limits import MAX_RETRIEVAL_QUERY_CHARS
from services.synthesis.pipeline import SynthesisPipeline, SynthesisRequest, SynthesisStatus
from services.synthesis.question import analyse_question, question_parts, questions_asked
from tests.unit.synthesis.fakes import FakeRetriever, RuleValidator, scored

HISTORY = (
    Turn("user", "What is the punishment for cheating?"),
    Turn("assistant", "Whoever cheats shall be punished [IPC_417_0]."),
)


class TestAnalyseQuestion:
    def test_a_standalone_question_is_its_own_focus_and_query(self) -> None:
        a = analyse_question("  What is the punishment for cheating under section 420?  ")

        assert a.question == "What is the punishment for cheating under section 420?"
        assert a.retrieval_query == a.focus == a.question
        assert a.intent is Intent.PUNISHMENT and not a.follow_up
        assert a.focus_terms is a.key_terms and a.key_terms.sections == ("420",)
        assert a.queries == (a.question,) and a.comparison is None

    def test_a_follow_up_folds_the_previous_question_in(self) -> None:
        a = analyse_question("And for extortion?", HISTORY, history_turns=4)

        assert a.follow_up
        assert a.retrieval_query == "What is the punishment for cheating? And for extortion?"
        assert a.intent is Intent.PUNISHMENT  # the question itself has none: the query's
        assert a.focus == a.question  # "extortion" is named: the question stays the focus

    def test_a_question_that_names_nothing_takes_the_query_as_focus(self) -> None:
        a = analyse_question("What about it?", HISTORY, history_turns=4)

        assert a.focus == a.retrieval_query != a.question
        assert not (a.key_terms.terms or a.key_terms.sections)
        assert a.answer_terms is a.focus_terms and "cheat" in a.focus_terms.terms

    @pytest.mark.parametrize("greeting", ["Thanks!", "ok", "Good evening, how are you?"])
    def test_greetings_alone_are_never_a_follow_up(self, greeting: str) -> None:
        # They name nothing, but ask nothing either: refused, not the previous question again.
        a = analyse_question(greeting, HISTORY, history_turns=4)

        assert not a.follow_up and a.focus == a.retrieval_query == a.question
        assert a.focus_terms.is_empty

    def test_a_request_naming_nothing_asks_about_the_previous_question(self) -> None:
        a = analyse_question("I would like to know more about this.", HISTORY, history_turns=4)

        assert a.follow_up and a.key_terms.is_empty
        assert a.focus == a.retrieval_query
        assert a.focus_terms.terms == ("cheat",)  # the frame of the question is left out too

    def test_a_long_previous_turn_is_folded_in_only_as_far_as_retrieval_takes(self) -> None:
        # A user turn may hold 8,000 characters; retrieval's query at most 2,000. Found by a new
        # user: the call failed with INVALID_ARGUMENT on a field named `query` the request
        # does not have. The question goes whole, the previous turn's last whole words fit.
        story = "My neighbour took my bicycle from the yard without asking. " * 40
        turns = (Turn("user", story + "What is the punishment for theft?"),)
        a = analyse_question("And for cheating?", turns, history_turns=4)

        assert a.follow_up and len(a.retrieval_query) <= MAX_RETRIEVAL_QUERY_CHARS
        assert a.retrieval_query.endswith("What is the punishment for theft? And for cheating?")
        assert a.retrieval_query.split()[0] in story.split()  # begins at a whole word

    @pytest.mark.parametrize(
        ("previous", "limit", "folded"),
        [
            ("a b c", 10, "a b c Q?"),
            ("alpha beta gamma delta", 13, "delta Q?"),  # "gamma delta" would not fit
            ("x" * 50, 10, "Q?"),  # one word too long for the room: left out, never cut
        ],
    )
    def test_fold_previous_keeps_whole_words_within_the_limit(
        self, previous: str, limit: int, folded: str
    ) -> None:
        assert question.fold_previous(previous, "Q?", limit) == folded
        assert len(question.fold_previous(previous, "Q?", limit)) <= limit

    def test_fold_previous_fits_the_limit_as_retrieval_counts_it(self) -> None:
        """Found in review: "…" is three characters once NFKC-normalised, as retrieval reads a
        query, so a fold that fit by raw length was refused downstream as too long."""
        previous = "He said … and left. " * 111  # 2,220 characters, 2,442 normalised
        folded = question.fold_previous(previous, "And its punishment?")

        assert len(normalise_query(folded)) <= MAX_RETRIEVAL_QUERY_CHARS
        assert folded.endswith("and left. And its punishment?")

    @pytest.mark.parametrize("marked", ["\u202eWhat is theft?", "\ufeffWhat\u200b is theft?"])
    def test_invisible_format_marks_change_nothing(self, marked: str) -> None:
        # Found by a new user: a leading right-to-left mark hid "What is" from the intent cues
        # and the answer quoted three sentences instead of one.
        plain, a = analyse_question("What is theft?"), analyse_question(marked)

        assert a.question == plain.question == "What is theft?"
        assert (a.intent, a.retrieval_query, a.parts) == (
            plain.intent,
            plain.retrieval_query,
            plain.parts,
        )

    @pytest.mark.parametrize(
        ("written", "read"),
        [
            ("What is the punishment for th\u0435ft?", "What is the punishment for theft?"),
            (
                "\uff37\uff48\uff41\uff54 \uff49\uff53 \uff54\uff48\uff45 "
                "\uff50\uff55\uff4e\uff49\uff53\uff48\uff4d\uff45\uff4e\uff54 "
                "\uff46\uff4f\uff52 \uff54\uff48\uff45\uff46\uff54\uff1f",
                "What is the punishment for theft?",
            ),
            ("\uff14\uff12\uff10", "420"),
        ],
    )
    def test_the_question_is_read_as_a_reader_sees_it_before_anything_else(
        self, written: str, read: str
    ) -> None:
        # Found by a tester: a Cyrillic е hid "theft" from the key terms and retrieval (the
        # model then rescued s.115), and full-width text was classified before NFKC.
        plain, a = analyse_question(read), analyse_question(written)

        assert a.question == plain.question == read
        assert (a.intent, a.retrieval_query, a.key_terms, a.parts) == (
            plain.intent,
            plain.retrieval_query,
            plain.key_terms,
            plain.parts,
        )

    def test_a_previous_turn_is_read_as_a_reader_sees_it(self) -> None:
        turns = (Turn("user", "What is the punishment for th\u0435ft?"),)

        a = analyse_question("And for cheating?", turns, history_turns=4)

        assert a.retrieval_query == "What is the punishment for theft? And for cheating?"

    def test_history_beyond_the_turn_limit_is_not_read(self) -> None:
        a = analyse_question("What about it?", HISTORY, history_turns=0)

        assert not a.follow_up and a.retrieval_query == "What about it?"

    def test_a_comparison_brings_one_query_per_term(self) -> None:
        a = analyse_question("What is the difference between theft and extortion?")

        assert a.comparison is not None and a.comparison.terms == ("theft", "extortion")
        assert a.queries == (a.retrieval_query, *a.comparison.queries)

    def test_a_follow_up_is_never_a_comparison(self) -> None:
        a = analyse_question("And the difference between theft and extortion?", HISTORY, 4)

        assert a.follow_up and a.comparison is None


class TestAnalysedOnce:
    async def test_a_request_extracts_the_questions_key_terms_once(
        self, ipc: Mapping[str, Chunk], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        calls: list[str] = []
        real = sufficiency.extract_key_terms

        def counting(text: str) -> Any:
            calls.append(text)
            return real(text)

        for module in (question, sufficiency, extractive):
            monkeypatch.setattr(module, "extract_key_terms", counting)
        retriever = FakeRetriever(scored(ipc, "IPC_420_0", "IPC_415_0", "IPC_417_0"))
        synth = SynthesisPipeline(retriever, RuleValidator(), ExtractiveGenerator())

        result = await synth.answer(
            SynthesisRequest("What is the punishment for cheating under section 420?", top_k=3)
        )

        assert result.status is SynthesisStatus.ANSWERED
        assert calls == ["What is the punishment for cheating under section 420?"]


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "How is trafficking of persons punished, and how is sexual harassment punished?",
            ("How is trafficking of persons punished?", "How is sexual harassment punished?"),
        ),
        ("What is theft; what is robbery?", ("What is theft?", "What is robbery?")),
        (
            "Who is a public servant and what is a court of justice?",
            ("Who is a public servant?", "What is a court of justice?"),
        ),
        # "and" inside one question: one part
        (
            "What is the punishment for cheating and dishonestly inducing delivery?",
            ("What is the punishment for cheating and dishonestly inducing delivery?",),
        ),
        # a later part's "it" is the first part's topic (rule AQ); other pointers keep it whole
        (
            "What is criminal conspiracy and how is it punished?",
            ("What is criminal conspiracy?", "How is criminal conspiracy punished?"),
        ),
        (
            "What is criminal intimidation and what is its punishment?",
            ("What is criminal intimidation?", "What is the punishment of criminal intimidation?"),
        ),
        (
            "What are theft and robbery and how are they punished?",
            ("What are theft and robbery and how are they punished?",),
        ),
        # rule AR: a part with two "it"s stays whole (golden ipc-110 was refused when read)
        (
            "What is criminal conspiracy and how is it punished when it is not to commit a "
            "serious offence?",
            (
                "What is criminal conspiracy and how is it punished when it is not to commit a "
                "serious offence?",
            ),
        ),
        ("What is theft?", ("What is theft?",)),
        # Rule U: a list of questions joined by commas, closed by ", and" or ";"
        (
            "What is theft, what is extortion, and what is robbery?",
            ("What is theft?", "What is extortion?", "What is robbery?"),
        ),
        (
            "How is theft punished, how is robbery punished; what is extortion?",
            ("How is theft punished?", "How is robbery punished?", "What is extortion?"),
        ),
        # ... but a comma alone never splits, nor one in a list whose first piece is no
        # wh-question, and a piece that points back keeps the sentence whole
        (
            "What if someone steals, what is the punishment?",
            ("What if someone steals, what is the punishment?",),
        ),
        ("What is theft, what is extortion?", ("What is theft, what is extortion?",)),
        (
            "Is theft bailable, what is robbery, and what is extortion?",
            ("Is theft bailable, what is robbery?", "What is extortion?"),
        ),
        (
            "What is theft, how is it punished, and what is robbery?",
            ("What is theft?", "How is theft punished?", "What is robbery?"),
        ),
        (
            "What is theft, how are such thefts punished, and what is robbery?",
            ("What is theft, how are such thefts punished, and what is robbery?",),
        ),
        # Rule AX: "when" before an auxiliary opens a part; before a subject it is a clause
        (
            "How is extortion punished, and when is rioting an offence?",
            ("How is extortion punished?", "When is rioting an offence?"),
        ),
        (
            "When is rioting an offence, and how is it punished?",
            ("When is rioting an offence?", "How is rioting punished?"),
        ),
        (
            "What is the punishment for theft at night and when the thief is armed?",
            ("What is the punishment for theft at night and when the thief is armed?",),
        ),
        # Rule BB: a request opens a part as a question word does, first or later ...
        (
            "Define forgery, and tell me how cheating is punished.",
            ("Define forgery?", "Tell me how cheating is punished?"),
        ),
        (
            "What is extortion; also explain how robbery is punished.",
            ("What is extortion?", "Explain how robbery is punished?"),
        ),
        (
            "Tell me about theft, and explain how it is punished.",
            ("Tell me about theft?", "Explain how theft is punished?"),
        ),
        (
            "How is theft punished, and can you define robbery?",
            ("How is theft punished?", "Can you define robbery?"),
        ),
        # ... but only a request frame: an imperative verb alone is no request ("give false
        # evidence"), nor is a request under three words, nor a clause before it
        (
            "Is it a crime to threaten a person and give false evidence?",
            ("Is it a crime to threaten a person and give false evidence?",),
        ),
        ("What is theft and explain", ("What is theft and explain",)),
        (
            "If my neighbour steals, and tell me how theft is punished",
            ("If my neighbour steals, and tell me how theft is punished",),
        ),
    ],
)
def test_question_parts(question: str, parts: tuple[str, ...]) -> None:
    assert question_parts(question) == parts


NINE = " ".join(
    f"What is {o}?"
    for o in [
        "theft",
        "robbery",
        "extortion",
        "cheating",
        "murder",
        "rape",
        "dacoity",
        "forgery",
        "kidnapping",
    ]
)


class TestQuestionSentences:
    """Separate question sentences (Then S, S3): parts when each is a wh-question of its own,
    else one question; every question sentence counts against the limit either way."""

    @pytest.mark.parametrize(
        ("question", "parts"),
        [
            ("What is theft? What is robbery?", ("What is theft?", "What is robbery?")),
            (
                "What is section 378? How is section 379 punished?",
                ("What is section 378?", "How is section 379 punished?"),
            ),
            (
                "What is theft, and what is robbery? Who is a public servant?",
                ("What is theft?", "What is robbery?", "Who is a public servant?"),
            ),
            # "it" is the first question's topic (rule AQ)
            ("What is theft? How is it punished?", ("What is theft?", "How is theft punished?")),
            (
                "What is extortion? What is its punishment?",
                ("What is extortion?", "What is the punishment of extortion?"),
            ),
            # Pointing back otherwise, naming nothing, a yes/no application, context: one.
            ("What is theft? How are they punished?", ("What is theft? How are they punished?",)),
            ("What is theft? What is the punishment?", ("What is theft? What is the punishment?",)),
            (
                "What counts as house trespass? Does going into a temple count?",
                ("What counts as house trespass? Does going into a temple count?",),
            ),
            (
                "Our maid stole gold from the cupboard. What is the punishment?",
                ("Our maid stole gold from the cupboard. What is the punishment?",),
            ),
            ("Thanks. What is extortion?", ("Thanks. What is extortion?",)),
            ("What is s. 302?", ("What is s. 302?",)),
        ],
    )
    def test_question_parts_of_separate_sentences(
        self, question: str, parts: tuple[str, ...]
    ) -> None:
        assert question_parts(question) == parts

    @pytest.mark.parametrize(
        ("question", "asked"),
        [
            ("What is theft?", 1),
            ("Thanks. What is extortion?", 1),
            ("What is theft? How is it punished?", 2),
            ("What is theft, and how is robbery punished? Is extortion a crime?", 3),
            (NINE, 9),
            (NINE.replace("What is", "Is").replace("?", " a crime?"), 9),
            ("punishment for theft", 1),
        ],
    )
    def test_questions_asked_counts_every_question_sentence(
        self, question: str, asked: int
    ) -> None:
        assert questions_asked(question) == asked

    def test_analysis_reads_a_statement_and_counts_the_questions(self) -> None:
        assert analyse_question("Theft is punishable with death.").statement
        assert not analyse_question("What is theft? What is robbery?").statement
        assert analyse_question(NINE).asked == 9


def test_analysis_carries_the_focus_parts() -> None:
    analysis = analyse_question("What is theft, and what is extortion?")
    assert analysis.parts == ("What is theft?", "What is extortion?")


class TestListQuestions:
    """Rule AI (docs/EVALUATION.md, "Then AI"): a list of things asked about in one frame that
    names nothing itself is asked once per thing, so each is retrieved and answered on its own."""

    @pytest.mark.parametrize(
        ("question", "parts"),
        [
            (
                "What are the punishments for theft, robbery and dacoity?",
                (
                    "What are the punishments for theft?",
                    "What are the punishments for robbery?",
                    "What are the punishments for dacoity?",
                ),
            ),
            # a wh-word and "are" before the list, the rest after it: "is" for each thing
            (
                "How are theft, robbery, and dacoity punished?",
                ("How is theft punished?", "How is robbery punished?", "How is dacoity punished?"),
            ),
            # things of two words; the corpus's name ("IPC") is no topic
            (
                "What does the IPC mean by wrongful gain and wrongful loss?",
                (
                    "What does the IPC mean by wrongful gain?",
                    "What does the IPC mean by wrongful loss?",
                ),
            ),
            # articles and the repeated preposition are not part of the thing
            (
                "What is the punishment for the theft and for the robbery?",
                ("What is the punishment for theft?", "What is the punishment for robbery?"),
            ),
            (
                "Who can be punished for rioting and affray?",
                ("Who can be punished for rioting?", "Who can be punished for affray?"),
            ),
            # rule AK: a wh-word and "is"/"are" with nothing after the list
            ("What are theft and robbery?", ("What is theft?", "What is robbery?")),
            # rule AL: a request opened by an imperative, its closing mark kept
            ("Define theft and robbery.", ("Define theft.", "Define robbery.")),
            ("Define theft and robbery", ("Define theft", "Define robbery")),
            (
                "Explain theft, robbery and dacoity!",
                ("Explain theft!", "Explain robbery!", "Explain dacoity!"),
            ),
            (
                "Tell me about theft and robbery.",
                ("Tell me about theft.", "Tell me about robbery."),
            ),
            (
                "List the punishments for theft and robbery",
                ("List the punishments for theft", "List the punishments for robbery"),
            ),
            # rule AN: a request frame before the list, its words no topic
            (
                "Please explain theft and robbery.",
                ("Please explain theft.", "Please explain robbery."),
            ),
            (
                "Can you explain theft and robbery?",
                ("Can you explain theft?", "Can you explain robbery?"),
            ),
            (
                "I would like to know about theft and robbery.",
                ("I would like to know about theft.", "I would like to know about robbery."),
            ),
            # rule AW: a definition request frame before the list
            (
                "Please define theft and robbery.",
                ("Please define theft.", "Please define robbery."),
            ),
            (
                "Can you define theft and extortion?",
                ("Can you define theft?", "Can you define extortion?"),
            ),
            (
                "Could you please define theft and robbery?",
                ("Could you please define theft?", "Could you please define robbery?"),
            ),
            (
                "Kindly explain theft, robbery and dacoity",
                ("Kindly explain theft", "Kindly explain robbery", "Kindly explain dacoity"),
            ),
            (
                "What is wrongful gain and wrongful loss?",
                ("What is wrongful gain?", "What is wrongful loss?"),
            ),
            # rule BG: the frame's preposition repeated before each later thing marks where it
            # starts, so the things may be longer, and unequal
            (
                "What are the punishments for murder and for culpable homicide not amounting to "
                "murder?",
                (
                    "What are the punishments for murder?",
                    "What are the punishments for culpable homicide not amounting to murder?",
                ),
            ),
            (
                "What is the punishment for theft and for theft in a dwelling house?",
                (
                    "What is the punishment for theft?",
                    "What is the punishment for theft in a dwelling house?",
                ),
            ),
        ],
    )
    def test_a_list_is_asked_once_per_thing(self, question: str, parts: tuple[str, ...]) -> None:
        assert question_parts(question) == parts
        assert questions_asked(question) == len(parts)

    @pytest.mark.parametrize(
        "question",
        [
            # one thing of more words: a title ("and" inside it), a qualified thing
            "What is the punishment for cheating and dishonestly inducing delivery?",
            "What is the punishment for theft of cattle and sheep?",
            "What are the punishments for murder and culpable homicide not amounting to murder?",
            # rule BG: a repeated preposition, but a later thing that opens with no topic word
            "What is the penalty for rioting and for being armed with a deadly weapon?",
            "What is the punishment for theft and for how long?",
            # rule AK: things of unequal length may share a head ("rash driving")
            "What is the punishment for rash and negligent driving?",
            "What is the punishment for false weights and measures?",
            "Who can be punished for rioting and unlawful assembly?",
            # the frame names something itself, or ends in no listing preposition
            "What is the punishment for stalking on a first and on a second conviction?",
            "Were Scott Derrickson and Ed Wood of the same nationality?",
            "Is it a crime to hit and run?",
            # alternatives, a section list, a bare comma list, not a question
            "What is the punishment for theft or robbery?",
            "What are the punishments for IPC 379 and 380?",
            "What are the punishments for theft, robbery, dacoity?",
            "The punishments for theft and robbery are what?",
            # rule AL: a statement, a comparison; rule AN: no request frame of the conversation
            # ("Please define theft and robbery." is one since rule AW; "Kindly define" is
            # not yet: "kindly" before "define" is no conversation word to the list reader)
            "Theft and robbery are punishable.",
            "Kindly define theft and robbery.",
            "Help me understand theft and robbery",
            "Please theft and robbery.",
            "Compare theft and robbery.",
            "Define rash and negligent driving.",
        ],
    )
    def test_other_questions_with_and_stay_whole(self, question: str) -> None:
        assert question_parts(question) == (question,)

    def test_a_comparison_is_not_split_into_a_list(self) -> None:
        question = "How do the punishments for theft and robbery compare?"
        analysis = analyse_question(question)
        assert analysis.comparison is not None
        assert analysis.parts == (question,)
        assert analysis.asked == 1
        # the switch the analysis turns off for a comparison
        listing = "What are theft and robbery?"
        assert question_parts(listing, lists=False) == (listing,)
        assert questions_asked(listing, lists=False) == 1

    def test_a_list_of_more_things_than_the_limit_counts_each(self) -> None:
        things = ", ".join(["theft", "robbery", "extortion", "cheating", "murder", "rape"])
        question = f"What are the punishments for {things}, dacoity, forgery and kidnapping?"
        assert analyse_question(question).asked == 9

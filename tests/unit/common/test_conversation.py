"""Conversation, not content (services/common/language/conversation.py): greetings, thanks and
request frames name no subject, in their frame only. Found on the front-door probes: "Hi, can you
help me?", "Good morning!" and "Please summarise the document for me." were answered because
"help", "good" and "document" are words of some passage (docs/EVALUATION.md, "The front door")."""

from __future__ import annotations

import pytest

from services.common.language.conversation import (
    asked_question,
    conversation_spans,
    is_pleasantry,
    is_request_frame,
    opens_request,
)


def _left(text: str) -> str:
    """``text`` with its conversation blanked, spaces squeezed."""
    for start, end in conversation_spans(text):
        text = f"{text[:start]}{' ' * (end - start)}{text[end:]}"
    return " ".join(text.split())


class TestConversationSpans:
    @pytest.mark.parametrize(
        ("text", "left"),
        [
            # greetings, thanks and goodbyes that fill a clause
            ("Good morning!", "!"),
            ("Hi, can you help me?", ", ?"),
            ("Hey there!", "!"),
            ("Thank you for your help.", "."),
            ("Good evening, how are you?", ", ?"),
            ("thanks a lot", ""),
            ("Help!", "!"),
            # request frames, with a rest that only points at the conversation
            ("I would like to know more about this.", "."),
            ("Please summarise the document for me.", "."),
            ("Could you summarise this for me?", "?"),
            ("I want to know everything.", "."),
            ("Tell me everything.", "."),
            ("Can you help me with this?", "?"),
            ("Please explain the key points of the provided documents.", "."),
            # a frame before a subject: the subject stays
            ("I want to know the punishment for theft.", "the punishment for theft."),
            ("Hello, what is the punishment for murder?", ", what is the punishment for murder?"),
            ("Thanks. What is extortion?", ". What is extortion?"),
            ("I would like to know more about cheating.", "more about cheating."),
            ("Can you help me understand abetment?", "understand abetment?"),
            ("I have a question about bail.", "about bail."),
            ("I want to know what a document is.", "what a document is."),
            ("Please summarise the document on forgery.", "the document on forgery."),
        ],
    )
    def test_conversation_is_left_out_and_content_stays(self, text: str, left: str) -> None:
        assert _left(text) == left

    @pytest.mark.parametrize(
        "text",
        [
            "What is a document?",  # s.29: "document" is the subject
            "Can a person help another commit theft?",  # "help" names the act
            "What does the law say about help given to a murderer?",
            "Is it good faith if something is done without due care?",
            "What is good faith?",
            "Good morning star is a flower?",  # a greeting must fill its clause
            "Is saying hello to a woman an offence?",
            'Who sang "Hello, Goodbye"?',  # quotes end no clause: a title is no greeting
            "What is the punishment for making a false document, and who can be punished?",
            "How do I know if property is stolen?",  # "know" outside an opening frame
            "Can my friend help me commit theft?",  # "help me" not opening the clause
        ],
    )
    def test_words_outside_a_frame_are_content(self, text: str) -> None:
        assert conversation_spans(text) == []

    @pytest.mark.parametrize(
        ("text", "left"),
        [
            # Subjects of the Code, never pointers (the review of F): before, each was blanked
            # whole, and with history the question was taken for a follow-up.
            ("Tell me about evidence.", "about evidence."),
            ("Explain the evidence", "the evidence"),
            ("Tell me about documents", "about documents"),
            ("Tell me about the matter", "about the matter"),
            ("Please explain the law on information.", "the law on information."),
            # ... while the conversation's own material, pointed at, still names nothing
            ("Please summarise this text for me.", "."),
            ("Explain the attached documents.", "."),
        ],
    )
    def test_the_codes_subjects_stay(self, text: str, left: str) -> None:
        assert _left(text) == left

    @pytest.mark.timeout(10)  # a hang guard, not a speed target: an exponential match never ends
    @pytest.mark.parametrize(
        "text",
        [
            "please help please " * 100 + "zzz",  # two readings of each phrase, once
            "goodbye " * 240 + "zzz",  # goodbye and good bye, once
            "hi " * 600 + "x",
            "please " * 250 + "tell me " * 10 + "x",
        ],
    )
    def test_long_repetitive_questions_are_read_in_linear_time(self, text: str) -> None:
        # 2,000 characters is the longest question; "please help please " x 10 took 1.5 s
        # before, doubling with each repeat.
        assert len(text) <= 2_000
        conversation_spans(text)
        is_pleasantry(text)


class TestIsPleasantry:
    @pytest.mark.parametrize(
        "text", ["ok", "hello", "Thanks!", "Good evening, how are you?", "Hey there!", "bye"]
    )
    def test_greetings_alone_are_pleasantries(self, text: str) -> None:
        assert is_pleasantry(text)

    @pytest.mark.parametrize(
        "text",
        [
            "Hi, can you help me?",  # a request: after a question it asks about that question
            "I would like to know more about this.",
            "Hello, what is theft?",
            "What is good faith?",
            "",
            "?",
        ],
    )
    def test_anything_more_is_not(self, text: str) -> None:
        assert not is_pleasantry(text)


class TestRequestFrames:
    """Rule AN: a request frame opens a text, or is all of it (the words before a list)."""

    @pytest.mark.parametrize(
        ("text", "opens", "alone"),
        [
            ("Please explain", True, True),
            ("Can you tell me about", True, True),
            ("I would like to know about", True, True),
            ("Can you explain theft?", True, False),
            ("Please", False, False),
            ("Explain theft and robbery", True, False),
            ("What is theft?", False, False),
            # a definition request is a request frame too (rule AW)
            ("Define", True, True),
            ("Please define", True, True),
            ("Can you define", True, True),
            ("Can you define theft?", True, False),
        ],
    )
    def test_opens_request_and_is_request_frame(self, text: str, opens: bool, alone: bool) -> None:
        assert opens_request(text) is opens
        assert is_request_frame(text) is alone


class TestAskedQuestion:
    """Rule AU: the answerability model reads a request as the question it asks."""

    @pytest.mark.parametrize(
        ("text", "asked"),
        [
            ("Define criminal breach of trust.", "What is criminal breach of trust?"),
            ("Please define theft.", "What is theft?"),
            ("Can you define theft?", "What is theft?"),
            ("Give me the definition of extortion.", "What is extortion?"),
            ("What do you mean by good faith?", "What is good faith?"),
            ("What is meant by wrongful gain?", "What is wrongful gain?"),
            ("Explain extortion.", "What is extortion?"),
            ("Can you explain the punishment for theft?", "What is the punishment for theft?"),
            ("Tell me about theft.", "What is theft?"),
            ("I would like to know about robbery.", "What is robbery?"),
            ("I want to know the punishment for theft.", "What is the punishment for theft?"),
            (
                "Can you help me understand the punishment for theft?",
                "What is the punishment for theft?",
            ),
            ("Tell me how theft is punished.", "How theft is punished?"),
            # a joining word only when it is a word: "on-the-spot" keeps its "on"
            ("Explain on-the-spot fines", "What is on-the-spot fines?"),
            # rule BK: greetings and thanks that open it are no part of what it asks
            ("Thanks. What is extortion?", "What is extortion?"),
            ("Hello, what is the punishment for murder?", "What is the punishment for murder?"),
            ("Hi there, thanks, what is dacoity?", "What is dacoity?"),
            ("Good morning! Define robbery.", "What is robbery?"),
            ("Hi, can you tell me about theft?", "What is theft?"),
        ],
    )
    def test_a_request_is_read_as_its_question(self, text: str, asked: str) -> None:
        assert asked_question(text) == asked

    @pytest.mark.parametrize(
        "text",
        [
            "What is theft?",
            "How is theft punished?",
            "Please help me.",  # the rest names nothing
            "Tell me more about this.",
            "Explain.",
            "Is defining a term an offence?",  # "define" inside a word, not a request
            "",
            "Thanks a lot!",  # only pleasantries: nothing else to read
            "Hello",
            "What is theft? Thanks.",  # thanks after the question
        ],
    )
    def test_anything_else_is_read_as_written(self, text: str) -> None:
        assert asked_question(text) == text

"""Conversation, not content: greetings, thanks and request frames in a question.

A question's key terms say what it is about (``key_terms.extract_key_terms``). Some of its words
only say how the user talks: "Hi, can you help me?", "Good morning!", "I would like to know more
about this.", "Please summarise the document for me." Each shares an ordinary word with some
passage ("help", "good", "know", "document"), so read as key terms they tied the question to a
passage and it was answered (docs/EVALUATION.md, "The front door", F). Here such words are found
in their frame only, never as stop words: "help" in "Can a person help another commit theft?",
"good" in "What is good faith?" and "document" in "What is a document?" are the subject.

- A **greeting** (or thanks, or goodbye) counts only when it fills a clause, from the start or a
  punctuation mark to a punctuation mark or the end: "Hi,", "Good morning!", "Thank you for your
  help.", "Hey there!"; "Good morning star" and "Is it good faith ...?" are no greeting.
- A **request frame** counts only where it opens a clause ("can you help me", "I would like to
  know", "please summarise", "tell me", "I have a question"); the rest of that clause goes with it
  when it only points at the conversation ("more about this", "the document for me",
  "everything"), and stays when it names anything ("I want to know the punishment for theft",
  "I want to know what a document is").

``conversation_spans`` gives the character spans a key-term reader leaves out; ``is_pleasantry``
says an input is greetings and nothing else (never a follow-up to the turn before);
``opens_request`` that one opens a text, ``is_request_frame`` that a text is one alone.

A request asks a question: ``asked_question`` gives it ("Define X." and "Tell me about X" ask
"What is X?"), which the answerability model reads (rule AU) and the intent classifier
classifies (rule AV for a definition request, "Can you define X?"; rule BD for any request).
"""

from __future__ import annotations

import re
from typing import Final

from services.common.language.text import WORD_PATTERN, word_list

# Clauses: the text between marks that end one ("4.0" and "10,000" do not). Quotes do not end a
# clause, so a quoted title ('"Hello, Goodbye"') is never a clause of its own.
_CLAUSE_END: Final = re.compile(r"[;:!?\n]|[.,](?![0-9])")

# Each greeting reads one way only ("goodbye" is good\s*bye, never also a word of its own): the
# request pattern below repeats them, and two readings of one phrase made its failures
# exponential ("please help please ..." x 10 took 1.5 s, and a question may be 2,000 characters).
_GREETING_WORDS = (
    r"hi|hello|hey|hiya|howdy|greetings|namaste|good\s+(?:morning|afternoon|evening|day|night)"
    r"|(?:many\s+)?thanks|thank\s+(?:you|u)|thx|cheers|bye|good\s*bye|see\s+you"
    r"|ok|okay|how\s+are\s+you(?:\s+doing)?|nice\s+to\s+meet\s+you"
)
# A bare plea names nothing either: "Help!", "Please help me." (a whole clause only).
_GREETING_CORE = rf"{_GREETING_WORDS}|(?:please\s+)?help(?:\s+(?:me|us))?(?:\s+please)?"
_GREETING_TAIL = (
    r"there|again|everyone|everybody|all|sir|madam|so\s+much|very\s+much|a\s+lot|in\s+advance"
    r"|today|to\s+you|for\s+(?:all\s+)?(?:your|the|this)\s+(?:help|assistance|time|answers?)"
    r"|for\s+helping(?:\s+(?:me|us))?"
)
_GREETING: Final = re.compile(
    rf"^\s*(?:{_GREETING_CORE})(?:\s+(?:{_GREETING_TAIL}))*\s*$", re.IGNORECASE
)

# What opens a request and says only that something is asked for.
_I_WANT = r"i\s+(?:(?:would|'d|’d|should)\s+(?:like|love|want)|want|wish|need|hope)"
_LEARN = r"(?:know|learn|understand|ask|hear|find\s+out|see)"
_REQUEST: Final = re.compile(
    rf"^\s*(?:(?:{_GREETING_WORDS}|please|kindly|so|and|now|then)\s+)*"
    r"(?:"
    r"(?:(?:can|could|would|will)\s+(?:you|u)\s+)?(?:please\s+|kindly\s+)?"
    r"(?:(?:help|assist)\s+(?:me|us)(?:\s+out)?|(?:tell|show|give|teach)\s+(?:me|us)"
    r"|explain|describe|summari[sz]e|sum\s+up|outline|elaborate(?:\s+on)?"
    r"|let\s+(?:me|us)\s+know)"
    rf"|{_I_WANT}\s+to\s+{_LEARN}"
    rf"|{_I_WANT}\s+(?:some\s+)?(?:help|assistance|information|info)"
    r"|i\s+(?:have|got|had)\s+(?:a|one|some|another)\s+(?:question|query|doubt)s?"
    r"|(?:what\s+)?(?:do|did)\s+you\s+know"
    r")\b",
    re.IGNORECASE,
)
# The rest of a request's clause that names nothing: pointers at the conversation and its
# material. Closed on purpose: any other word is a subject, and the clause keeps it.
_POINTER_WORDS: Final = frozenset(
    word_list("""
    a an the this that these those it its them all everything anything something whole entire
    more further some bit little few above below following here there again out up please me
    us my our your of about on with regarding for to in so then now too also briefly quickly
    simply detail details detailed
    context summary overview answer answers question questions thing things stuff
    provided given attached uploaded shared relevant main key point points
    """)
)
# Words that name the conversation's material only after a word that points at it ("the
# document for me", "this text"): "Tell me about documents" asks about the IPC's documents
# (s.29). Evidence, information and a matter are subjects of the Code and never pointers.
_MATERIAL_WORDS: Final = frozenset(
    word_list("""
    document documents text texts passage passages source sources material materials page pages
    file files content contents excerpt excerpts topic subject
    """)
)
_POINTING: Final = frozenset(
    word_list("the this that these those my our your its above provided given attached uploaded")
)
_WORD: Final = re.compile(WORD_PATTERN)


def _clauses(text: str) -> list[tuple[int, int]]:
    """The (start, end) spans of ``text``'s clauses, marks left out."""
    spans, start = [], 0
    for mark in _CLAUSE_END.finditer(text):
        spans.append((start, mark.start()))
        start = mark.end()
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def _only_pointers(text: str) -> bool:
    words = [w.lower() for w in _WORD.findall(text)]
    return all(
        w in _POINTER_WORDS or (w in _MATERIAL_WORDS and i > 0 and words[i - 1] in _POINTING)
        for i, w in enumerate(words)
    )


def conversation_spans(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` that are conversation, not content: clauses that are greetings, and
    request frames opening a clause (with the rest of the clause when it names nothing)."""
    spans: list[tuple[int, int]] = []
    for start, end in _clauses(text):
        clause = text[start:end]
        if _GREETING.match(clause):
            spans.append((start, end))
            continue
        frame = _REQUEST.match(clause)
        if frame is None:
            continue
        if _only_pointers(clause[frame.end() :]):
            spans.append((start, end))
        else:
            spans.append((start, start + frame.end()))
    return spans


# A request for a definition: "Define X", "Can you define X?", "Give me the definition of X",
# "What is meant by X?", "What do you mean by X?" (rule AU of docs/EVALUATION.md).
_DEFINE: Final = re.compile(
    r"^\s*(?:(?:please|kindly)\s+)?(?:(?:can|could|would|will)\s+(?:you|u)\s+)?"
    r"(?:(?:please|kindly)\s+)?"
    r"(?:define|give\s+(?:me\s+|us\s+)?the\s+(?:definition|meaning)\s+of"
    r"|what\s+(?:is|was)\s+meant\s+by|what\s+do\s+(?:you|we|they)\s+mean\s+by)\b",
    re.IGNORECASE,
)
# What a request asks about may open with a word that only joins it to the frame.
_JOINING: Final = re.compile(
    r"^(?:(?:to\s+)?(?:understand|know|learn|find\s+out)\s+)?"
    r"(?:(?:about|regarding|on|of|as\s+to)\s+)?",
    re.IGNORECASE,
)
# The words that open a question asked inside a request ("Tell me how theft is punished").
_EMBEDDED_QUESTION: Final = re.compile(
    r"^(?:what|which|who|whom|whose|when|where|why|how|whether|if)\b", re.IGNORECASE
)


def _request_frame(text: str) -> re.Match[str] | None:
    """The request frame opening ``text``: a definition request ("Can you define") or another
    ("Please explain", "I would like to know about"); None when none does."""
    return _DEFINE.match(text) or _REQUEST.match(text)


def opens_request(text: str) -> bool:
    """True when a request frame opens ``text`` ("Please explain ...", "Can you tell me ...",
    and since rule AW a definition request: "Please define ...", "Can you define ...")."""
    return _request_frame(text) is not None


def is_request_frame(text: str) -> bool:
    """True when ``text`` is a request frame and nothing more: "Please explain", "Can you tell
    me about", "I would like to know about", "Can you define" (the words before a list a
    request asks about one by one, rules AN and AW of docs/EVALUATION.md)."""
    frame = _request_frame(text)
    return frame is not None and _only_pointers(text[frame.end() :])


def asked_question(text: str) -> str:
    """The question a request asks, as a question: what the answerability model reads (it was
    trained on questions and reads "Define X." far worse than "What is X?"; rule AU).

    "Define X" (and "Can you define X?", "Give me the definition of X", "What is meant by X?")
    and any other request frame opening ``text`` ("Explain X", "Tell me about X", "I would
    like to know X") before a noun phrase give "What is X?"; before a question word's clause
    ("Tell me how theft is punished") that clause as a question. ``text`` itself when no frame
    opens it or the rest names nothing ("Please help me"). Greetings or thanks that open it
    are left out first ("Thanks. What is extortion?" asks "What is extortion?"; rule BK)."""
    text = after_pleasantries(text)
    frame = _request_frame(text)
    if frame is None:
        return text
    rest = _JOINING.sub("", text[frame.end() :].strip(" \t\n,:;-"))
    rest = rest.rstrip(" \t\n.?!")
    if not rest or _only_pointers(rest):
        return text
    if _EMBEDDED_QUESTION.match(rest):
        return f"{rest[0].upper()}{rest[1:]}?"
    return f"What is {rest}?"


def after_pleasantries(text: str) -> str:
    """``text`` from its first clause that is no greeting, thanks or goodbye ("Thanks. What is
    extortion?": "What is extortion?"; "Hello, what is the punishment for murder?": "What is
    the punishment for murder?"), its first letter capitalised; ``text`` itself when no such
    clause opens it or nothing else follows (rule BK)."""
    for start, end in _clauses(text):
        if not _GREETING.match(text[start:end]):
            if start == 0:
                return text
            rest = text[start:].lstrip()
            return f"{rest[:1].upper()}{rest[1:]}"
    return text


def is_pleasantry(text: str) -> bool:
    """True when ``text`` is greetings, thanks or goodbyes and nothing else ("ok", "Thanks!",
    "Good evening, how are you?"): it asks nothing, not even about the turn before."""
    clauses = _clauses(text)
    return bool(clauses) and all(_GREETING.match(text[s:e]) for s, e in clauses)

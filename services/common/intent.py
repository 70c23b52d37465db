"""Query intents shared by retrieval (expansion, rerank) and synthesis (sufficiency)."""

from __future__ import annotations

import enum
import re


class Intent(enum.Enum):
    """What a question asks for: drives retrieval expansion and the synthesis sufficiency rule."""

    DEFINITION = "definition"
    PUNISHMENT = "punishment"
    PROCEDURE = "procedure"
    SCOPE = "scope"
    GENERAL = "general"


# Order matters: punishment cues beat definition cues ("What is the punishment for theft?"),
# and the first pattern that matches wins.
_PATTERNS: tuple[tuple[Intent, re.Pattern[str]], ...] = (
    (
        Intent.PUNISHMENT,
        re.compile(
            r"\b(punish\w*|penalt\w*|sentence[ds]?|imprison\w*|fine[ds]?|jail|prison"
            r"|consequences?)\b",
            re.I,
        ),
    ),
    (
        Intent.PROCEDURE,
        re.compile(
            r"^\s*how (do|does|can|should|to|is|are)\b(?!.*\b(defined|meant|understood)\b)"
            r"|\b(steps?|procedure|process|file an?|apply for)\b",
            re.I,
        ),
    ),
    (
        Intent.SCOPE,
        re.compile(r"\b(extent|applicab\w*|appl(y|ies) to|scope|jurisdiction|extends? to)\b", re.I),
    ),
    # "What is section 420 about?" / "What does s. 302 say?" ask for a provision's content,
    # not a definition; matched before the broad "what is" definition cue.
    (
        Intent.GENERAL,
        re.compile(
            r"^\s*what (is|are|was|were|does|do) (the )?(section|sec\.?|s\.|law|article|art\."
            r"|clause)"
            r"\s*\d"
            r"|\bwhat (does|do|did) .+\b(say|says|state|provide|cover|deal with|prescribe"
            r"|require|contain|stipulate|lay down|pertain|concern|relate|discuss|address"
            r"|govern|talk about)\b"
            r"|\babout\s*\??\s*$",
            re.I,
        ),
    ),
    (
        Intent.DEFINITION,
        re.compile(
            r"^\s*(what (is|are|does)\b|define\b|definition\b|meaning of\b|who (is|are)\b)"
            r"|\bwhat does .+ mean\b|\bis defined\b"
            r"|^\s*how (is|are) .+\b(defined|meant|understood)\b",
            re.I,
        ),
    ),
)


# Explicit definition cues; a bare "What is ...?" only asks for a definition when it is short.
_EXPLICIT_DEFINITION = re.compile(
    r"\b(define|definition|meaning of|mean|meant|is defined|are defined|denote)\b", re.I
)
_SHORT_QUESTION_WORDS = 8


def classify_intent(question: str) -> Intent:
    """Classify a question into an intent with ordered regular-expression cues.

    "What is theft?" asks for a definition; "What is considered an escape from lawful custody
    for a State prisoner?" (longer than eight words, no explicit cue) is a general question.
    """
    for intent, pattern in _PATTERNS:
        if pattern.search(question):
            if (
                intent is Intent.DEFINITION
                and len(question.split()) > _SHORT_QUESTION_WORDS
                and not _EXPLICIT_DEFINITION.search(question)
            ):
                return Intent.GENERAL
            return intent
    return Intent.GENERAL

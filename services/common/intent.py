"""Query intents shared by retrieval (expansion, rerank) and synthesis (sufficiency)."""

from __future__ import annotations

import enum
import re


class Intent(enum.Enum):
    """What a question asks for; drives expansion in retrieval and the sufficiency rule in synthesis."""

    DEFINITION = "definition"
    PUNISHMENT = "punishment"
    PROCEDURE = "procedure"
    SCOPE = "scope"
    GENERAL = "general"


# Order matters: punishment cues beat definition cues ("What is the punishment for theft?").
_PATTERNS: tuple[tuple[Intent, re.Pattern[str]], ...] = (
    (
        Intent.PUNISHMENT,
        re.compile(
            r"\b(punish\w*|penalt\w*|sentence[ds]?|imprison\w*|fine[ds]?|jail|prison)\b", re.I
        ),
    ),
    (
        Intent.PROCEDURE,
        re.compile(
            r"^\s*how (do|does|can|should|to|is|are)\b|\b(steps?|procedure|process|file an?|apply for)\b",
            re.I,
        ),
    ),
    (
        Intent.SCOPE,
        re.compile(r"\b(extent|applicab\w*|appl(y|ies) to|scope|jurisdiction|extends? to)\b", re.I),
    ),
    (
        Intent.DEFINITION,
        re.compile(
            r"^\s*(what (is|are|does)\b|define\b|definition\b|meaning of\b|who (is|are)\b)"
            r"|\bwhat does .+ mean\b|\bis defined\b",
            re.I,
        ),
    ),
)


def classify_intent(question: str) -> Intent:
    """Classify a question into an intent with ordered regular-expression cues."""
    for intent, pattern in _PATTERNS:
        if pattern.search(question):
            return intent
    return Intent.GENERAL

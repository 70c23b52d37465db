"""Which writing system a text is in, as far as the models and rules can read it.

Every model this project ships (the embedding model, the answerability and entailment
cross-encoders) was trained on English, and every rule (key terms, numbers, negation, penalties,
roles) reads English words. A text written mostly in another script ("چوری کی سزا کیا ہے؟",
"चोरी की सज़ा क्या है?") is not read at all: the cross-encoders split it into characters they
have never seen and still return confident scores (the answerability model rescued an Urdu
question at 0.97 against an unrelated section; the entailment model "entailed" a Hindi claim
from a Hindi text that does not say it). So a question or an answer sentence mostly in a script
other than Latin is refused or not verified, never judged: docs/SYNTHESIS.md, "Questions the
system cannot read", and docs/VALIDATOR.md, "UNREADABLE_SCRIPT".

One definition for synthesis (the question) and the validator (a sentence and what it cites).
A text in Latin script is read whatever its language; only the script is judged here.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from functools import lru_cache
from typing import Final

__all__ = ["READABLE_SHARE", "unreadable_script"]

# A text is read when at least this share of its letters is Latin. Half: a Latin-script text
# quoting a few words of another script ("the word 'चोरी' means theft") is still read, and a
# text mostly in another script with a Latin acronym or two ("IPC की धारा 379") is not.
READABLE_SHARE: Final = 0.5

# Letters below U+0250 are all Latin (Basic Latin, Latin-1 Supplement, Latin Extended-A and
# -B); above it a letter's Unicode name says its script ("DEVANAGARI LETTER CA").
_LATIN_BELOW: Final = "\u0250"


@lru_cache(maxsize=4096)
def _script_of(letter: str) -> str:
    """The script word of a letter's Unicode name: "LATIN", "DEVANAGARI", "CJK", "ARABIC"."""
    name = unicodedata.name(letter, "")
    if "LATIN" in name:  # "FULLWIDTH LATIN SMALL LETTER A", "LATIN SMALL LETTER OPEN O"
        return "LATIN"
    return name.split(" ", 1)[0] if name else "UNKNOWN"


def unreadable_script(text: str) -> str | None:
    """The script most of ``text``'s non-Latin letters are in ("Devanagari", "Arabic", "CJK"),
    when fewer than ``READABLE_SHARE`` of its letters are Latin; None when the text is read (a
    Latin-script text, or one with no letters at all: numbers, punctuation)."""
    if text.isascii():
        return None
    latin = 0
    other: Counter[str] = Counter()
    for ch in text:
        if not ch.isalpha():
            continue
        if ch < _LATIN_BELOW:
            latin += 1
            continue
        script = _script_of(ch)
        if script == "LATIN":
            latin += 1
        else:
            other[script] += 1
    total = latin + sum(other.values())
    if not other or latin >= READABLE_SHARE * total:
        return None
    name = other.most_common(1)[0][0]
    return name if name == "CJK" else name.title()

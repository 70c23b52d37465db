"""Footnote reference markers left in statute text by the source's typesetting.

The bare acts were converted from pages whose footnote references were superscripts; the
conversion kept the digits and glued them to the word or punctuation mark they followed:
"commits the offence of trafficking1", "shall also be liable to fine1", "video graphed.1". An answer
quotes that text verbatim, and every term rule (BM25 tokens, key terms, the validator's content
terms) would read "trafficking1" where the statute says "trafficking". The statutes reader removes
the markers at ingest (``services.retrieval.corpus``); the files stay as fetched.

Only two shapes are markers, and each is a glued run of one or two digits:

- after a word of two or more letters whose last letter is lower case, with no letter or digit
  after the run: "trafficking1", "Magistrate1", "of7" (not "304B", "376AB" or "of1914": a
  section number has its letters after the digits, and a year is four digits);
- after a word's closing ".", ";" or "," at the end of a line (spaces after it do not
  count): "graphed.1", "comfortable with;1".

Not after a colon: "shall also be liable to fine:1" (IPC s.376, s.376AB, s.376DA, s.376DB) keeps
its digit. A line ending in a colon is a list's lead-in to the sentence splitter and the
generator, and two of those sections lost the provisos that followed the colon: served as
"fine:", s.376DA and s.376DB were refused as a lead-in with nothing after it, and a question on
rape quoted s.376AB's proviso without its penalty (docs/EVALUATION.md, "Then P").

A statute abbreviation is never the word ("Rs.10", "para.1", "no.2" stay): a number glued to an
abbreviation is a reference, not a footnote. Digits standing alone ("1. The expression", "1A.",
"1 Criminal Law (Amendment) Act, 2018", a footnote's own line) are left as they are.

Pure functions; no service imports.
"""

from __future__ import annotations

import re
from typing import Final

from services.common.language.sentences import STATUTE_ABBREVIATIONS

# The word (from its first letter: "3ab1" is no word), then either the glued digits or a closing
# mark and the digits at the line's end.
_MARKER: Final = re.compile(
    r"(?<![A-Za-z0-9])([A-Za-z]*[A-Za-z][a-z])"
    r"(?:(\d{1,2})(?![A-Za-z0-9])|([.;,])(\d{1,2})(?=[^\S\n]*$))",
    re.M,
)


def _unmarked(match: re.Match[str]) -> str:
    word, glued, mark, _ = match.groups()
    if word.lower() in STATUTE_ABBREVIATIONS:
        return match.group()
    return word if glued is not None else f"{word}{mark}"


def without_footnote_markers(text: str) -> str:
    """``text`` with the footnote reference digits glued to its words removed (module docstring).

    Nothing else changes: "trafficking1." becomes "trafficking.", "graphed.1" at a line's end
    becomes "graphed."; "fine:1" stays.
    """
    return _MARKER.sub(_unmarked, text)

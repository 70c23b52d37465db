"""Text a reader does not see as written: markup a client renders or runs, and characters that
hide, reorder or control what is shown.

An answer is delivered byte for byte, and clients render Markdown and HTML. A tag such as
``<svg onload=alert()>`` or ``<img src=/collect?d=…>`` runs or fetches something in the
reader's client; a Markdown link or image with a relative target (``[text](/login)``) goes where
the sentence does not say; a right-to-left override shows the sentence reversed; tag characters,
zero-width characters and control bytes hide text or drive a terminal. None of that is a claim
the evidence can support, so the validator refuses a sentence that holds any of it
(``UNSAFE_TEXT``), unless the cited evidence holds the same markup or invisible character itself
(a verbatim quote of an HTML page, or of a text with a zero-width space in a word). Absolute
links are ``links.py``'s: they must be links of the evidence.

Pure functions; no service imports.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Final

from services.common.language.links import links

# An HTML start or end tag, or a comment: "<svg onload=...>", "</p>", "<!-- -->". A letter must
# follow "<" at once, as HTML requires, so "a < b > c" is no tag.
_TAG: Final = re.compile(r"<!--.*?-->|</?[A-Za-z][A-Za-z0-9:-]*(?:[\s/][^<>]*)?>", re.S)
# A Markdown link or image, or a reference definition: "[text](target)", "![](target)",
# "[text]: target" at a line's start. A relative target is no link to links.py, which reads
# absolute ones (those it leaves to links.py's rule).
_MD_TARGET: Final = re.compile(r"!?\[[^\]\n]*\]\(([^)\n]*)\)|^[ \t]*\[[^\]\n]+\]:[ \t]*(\S+)", re.M)

# Never allowed, even where the evidence holds them: they reorder or control what a reader sees.
_BIDI_CONTROLS: Final = frozenset(
    "\u202a\u202b\u202c\u202d\u202e"  # embeddings and overrides
    "\u2066\u2067\u2068\u2069"  # isolates
)
# Format characters a reader needs: joiners in Indic and Persian script and in emoji, the soft
# hyphen, and the bidi marks (LRM, RLM, ALM), which set a neutral character's direction and
# occur in ordinary text (Wikipedia) without reordering anything.
_ALLOWED_FORMAT: Final = frozenset("\u200c\u200d\u00ad\u200e\u200f\u061c")
_ALLOWED_CONTROL: Final = frozenset("\t\n\r")


def _hidden(ch: str) -> str:
    """Why ``ch`` is not shown as written ("" when it is an ordinary character)."""
    if ch in _BIDI_CONTROLS:
        return "reorders"
    category = unicodedata.category(ch)
    if category == "Cc" and ch not in _ALLOWED_CONTROL:
        return "controls"
    if category == "Co":
        return "private"
    if category == "Cf" and ch not in _ALLOWED_FORMAT:
        return "invisible"
    return ""


def describe(ch: str) -> str:
    """A character as a report names it: "U+202E RIGHT-TO-LEFT OVERRIDE"."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'control character')}"


def unsafe(text: str, evidence: Iterable[str]) -> list[str]:
    """What in ``text`` a reader would not see as written, each named once, in order: markup
    (HTML tags and comments, Markdown link and image targets) and characters that reorder,
    hide or control the display. Markup, and invisible characters other than controls and
    reorderings, are allowed when the cited ``evidence`` holds them too (it is read only when
    ``text`` holds something to look up)."""
    found: dict[str, None] = {}
    held: str | None = None

    def in_evidence(piece: str) -> bool:
        nonlocal held
        if held is None:
            held = "\n".join(evidence)
        return piece in held

    for ch in dict.fromkeys(c for c in text if _hidden(c)):
        kind = _hidden(ch)
        if kind in ("reorders", "controls") or not in_evidence(ch):
            found[describe(ch)] = None
    pieces = [m.group().strip() for m in _TAG.finditer(text)]
    for match in _MD_TARGET.finditer(text):
        target = (match.group(1) if match.group(1) is not None else match.group(2)).strip()
        target = target.split()[0].strip("<>") if target.split() else ""
        if not (target and links(target) == [target]):  # an absolute link: links.py's rule
            pieces.append(match.group().strip())
    for piece in pieces:
        if not in_evidence(piece):
            shown = piece if len(piece) <= 60 else piece[:59] + "…"
            found[repr(shown)] = None
    return list(found)


def visible(text: str) -> str:
    """``text`` with each hidden character written as its escape ("\\u202e"), for quoting it
    in a message: a quoted override would reverse the message itself."""
    if not any(_hidden(c) for c in text):
        return text
    return "".join(
        ch.encode("unicode_escape").decode("ascii") if _hidden(ch) else ch for ch in text
    )

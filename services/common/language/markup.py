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

import html
import re
import unicodedata
from collections.abc import Iterable
from typing import Final

from services.common.language.links import links

# An HTML start or end tag: "<svg onload=...>", "</p>". A letter must follow "<" at once, as
# HTML requires, so "a < b > c" is no tag. Linear: the attributes stop at the next "<".
_TAG: Final = re.compile(r"</?[A-Za-z][A-Za-z0-9:-]*(?:[\s/][^<>]*)?>")
# A Markdown link or image opener, "[text](" or "![text](": its text holds no "[", so every
# match is found in one pass (a "[" run is no quadratic scan); the target is read after it.
_MD_OPEN: Final = re.compile(r"!?\[[^\[\]\n]*\]\(")
_MD_TARGET: Final = re.compile(r"[ \t]*<?([^\s()<>]{0,2048})")
# A reference definition at a line's start: "[text]: target".
_MD_DEFINITION: Final = re.compile(r"^[ \t]*\[[^\[\]\n]+\]:[ \t]*(\S+)", re.M)

# Never allowed, even where the evidence holds them: they reorder or control what a reader sees.
_BIDI_CONTROLS: Final = frozenset(
    "\u202a\u202b\u202c\u202d\u202e"  # embeddings and overrides
    "\u2066\u2067\u2068\u2069"  # isolates
)
# Format characters a reader needs: the soft hyphen, and the bidi marks (LRM, RLM, ALM), which
# set a neutral character's direction and occur in ordinary text (Wikipedia) without reordering
# anything. The joiners (ZWJ, ZWNJ) are needed too, but only between two visible characters:
# in Indic and Persian words and in emoji sequences (``_joiner_ok``); a run of them is a
# message hidden in the text.
_ALLOWED_FORMAT: Final = frozenset("\u00ad\u200e\u200f\u061c")
_JOINERS: Final = frozenset("\u200c\u200d")
_ALLOWED_CONTROL: Final = frozenset("\t\n\r")
# Variation selectors choose a glyph's form. Text (FE0E) or emoji (FE0F) style after a symbol is
# ordinary; any other, or one after a letter, can carry data a reader never sees (one per byte).
_STYLE_SELECTORS: Final = frozenset("\ufe0e\ufe0f")


def _is_selector(ch: str) -> bool:
    code = ord(ch)
    return 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


def _hidden(ch: str) -> str:
    """Why ``ch`` is not shown as written ("" when it is an ordinary character, or one whose
    neighbours decide: a joiner, a variation selector)."""
    if ch in _BIDI_CONTROLS:
        return "reorders"
    category = unicodedata.category(ch)
    if category == "Cc" and ch not in _ALLOWED_CONTROL:
        return "controls"
    if category == "Co":
        return "private"
    if category == "Cf" and ch not in _ALLOWED_FORMAT and ch not in _JOINERS:
        return "invisible"
    return ""


def _visible_neighbour(ch: str) -> bool:
    """A character a joiner may join: a letter, a combining mark or a symbol (emoji)."""
    return unicodedata.category(ch)[0] in "LMS" and not _is_selector(ch)


# The characters whose neighbours decide: joiners, and variation selectors (``_is_selector``).
_DEPENDENT: Final = re.compile("[\u200c\u200d\ufe00-\ufe0f\U000e0100-\U000e01ef]")


def _misplaced(text: str) -> dict[str, None]:
    """Joiners and variation selectors out of place: a joiner not between two visible
    characters (a run of them, or one at a word's edge), a selector other than a text or emoji
    style after a symbol."""
    found: dict[str, None] = {}
    for match in _DEPENDENT.finditer(text):
        k, ch = match.start(), match.group()
        if ch in _JOINERS:
            before = text[k - 1] if k else ""
            after = text[k + 1] if k + 1 < len(text) else ""
            if not (before and after and _visible_neighbour(before) and _visible_neighbour(after)):
                found[describe(ch)] = None
        elif _is_selector(ch):
            before = text[k - 1] if k else ""
            if not (ch in _STYLE_SELECTORS and before and unicodedata.category(before) == "So"):
                found[describe(ch)] = None
    return found


def _comments(text: str) -> list[str]:
    """HTML comments, in one pass; an unclosed "<!--" hides the rest of the text from a
    browser (a CommonMark HTML block runs to the end), so it is one to the end."""
    found: list[str] = []
    at = text.find("<!--")
    while at != -1:
        end = text.find("-->", at + 4)
        if end == -1:
            found.append(text[at:])
            break
        found.append(text[at : end + 3])
        at = text.find("<!--", end + 3)
    return found


def _markdown_links(text: str) -> list[str]:
    """Markdown links and images whose target is not an absolute link (links.py reads those),
    and reference definitions likewise: "[text](/login)", "![](/p?d=...)", "[r]: /x"."""
    found: list[str] = []
    for opener in _MD_OPEN.finditer(text):
        target = _MD_TARGET.match(text, opener.end())
        url = target.group(1) if target else ""
        if not (url and links(url) == [url]):
            found.append(text[opener.start() : target.end() if target else opener.end()] + ")")
    for definition in _MD_DEFINITION.finditer(text):
        url = definition.group(1).strip("<>")
        if not (url and links(url) == [url]):
            found.append(definition.group().strip())
    return found


def describe(ch: str) -> str:
    """A character as a report names it: "U+202E RIGHT-TO-LEFT OVERRIDE"."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'control character')}"


def unsafe(text: str, evidence: Iterable[str]) -> list[str]:
    """What in ``text`` a reader would not see as written, each named once, in order: markup
    (HTML tags and comments, Markdown link and image targets) and characters that reorder,
    hide or control the display, also written as HTML character references ("&#x202E;", which
    a renderer turns into the character). Markup, and invisible characters other than controls
    and reorderings, are allowed when the cited ``evidence`` holds them too (it is read only
    when ``text`` holds something to look up). Linear in the length of ``text``."""
    found: dict[str, None] = {}
    held: str | None = None

    def in_evidence(piece: str) -> bool:
        nonlocal held
        if held is None:
            held = "\n".join(evidence)
        return piece in held

    shown = html.unescape(text) if "&" in text else text
    # Each distinct character once, in the order it first appears (a sentence has a few dozen).
    for ch in (c for c in dict.fromkeys(shown) if _hidden(c)):
        kind = _hidden(ch)
        if kind in ("reorders", "controls") or not in_evidence(ch):
            found[describe(ch)] = None
    for named in _misplaced(shown):
        found[named] = None
    pieces = [m.group().strip() for m in _TAG.finditer(text)]
    pieces += _comments(text) if "<!--" in text else []
    pieces += _markdown_links(text) if "[" in text else []
    for piece in pieces:
        if not in_evidence(piece):
            quoted = clip(piece, 60)
            found[repr(quoted)] = None
    return list(found)


def clip(text: str, limit: int) -> str:
    """``text`` whole when it has at most ``limit`` code points, else its start and "…" within
    them, for quoting in a message. The cut never falls inside a character as a reader sees it
    (a letter and its combining marks, an emoji sequence): "đế" written decomposed, cut after
    its "e", would show "đe", another word."""
    if len(text) <= limit:
        return text
    cut = limit - 1
    while cut > 0 and _continues(text, cut):
        cut -= 1
    return text[: cut or limit - 1].rstrip() + "…"


def _continues(text: str, i: int) -> bool:
    """True when ``text[i]`` belongs to the same character as a reader sees it as ``text[i-1]``:
    a combining mark, a joiner or what a joiner joins, a variation selector, an emoji modifier
    or tag."""
    ch = text[i]
    code = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Mc", "Me")
        or ch in _JOINERS
        or text[i - 1] == "\u200d"
        or _is_selector(ch)
        or 0x1F3FB <= code <= 0x1F3FF  # skin tone modifiers
        or 0xE0020 <= code <= 0xE007F  # emoji tag characters
    )


def visible(text: str) -> str:
    """``text`` with each hidden character written as its escape ("\\u202e"), for quoting it
    in a message: a quoted override would reverse the message itself."""
    if not any(_hidden(c) for c in text):
        return text
    return "".join(
        ch.encode("unicode_escape").decode("ascii") if _hidden(ch) else ch for ch in text
    )

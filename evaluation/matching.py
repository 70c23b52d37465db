"""The one rule that decides whether a chunk's text is (part of) a gold evidence sentence."""

from __future__ import annotations

import re
from functools import lru_cache

_WS = re.compile(r"\s+")
_TOKEN = re.compile(r"\w+")

# A fragment shorter than this many tokens (and not the whole gold sentence) is too generic to
# count: "(1)" or "or" occur in many sentences.
MIN_OVERLAP_TOKENS = 4


def normalize_ws(text: str) -> str:
    """Collapse every run of whitespace (tabs, newlines, no-break spaces) to one space and strip."""
    return _WS.sub(" ", text).strip()


@lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[str, ...]:
    """Case-folded word tokens; punctuation and whitespace differences do not matter."""
    return tuple(_TOKEN.findall(text.casefold()))


def _contains(outer: tuple[str, ...], inner: tuple[str, ...]) -> bool:
    return f" {' '.join(inner)} " in f" {' '.join(outer)} "


def _affix_overlap(head: tuple[str, ...], tail: tuple[str, ...]) -> int:
    """Longest k with ``head[-k:] == tail[:k]``: how far ``head`` runs into ``tail``."""
    for k in range(min(len(head), len(tail)), 0, -1):
        if head[-k:] == tail[:k]:
            return k
    return 0


def text_overlaps(chunk_text: str, gold_text: str) -> bool:
    """True when ``chunk_text`` and ``gold_text`` are the same text under a different split.

    Both come from one document cut at possibly different points, so a chunk and a gold sentence
    can only relate in three ways, compared on case-folded word tokens T(x):

    1. the chunk contains the whole gold sentence (a coarser split): match;
    2. the chunk is a piece of the gold sentence (a finer split): match when the piece has at
       least min(4, |T(gold)|) tokens;
    3. the chunk straddles a boundary, its end overlapping the gold's start or its start the
       gold's end: match when that overlap is at least half the chunk's tokens and at least
       min(4, |T(gold)|) tokens.

    A phrase that two different sentences share in the middle (statutory boilerplate such as
    "shall be punished with imprisonment") never matches. The caller checks the documents agree.
    """
    c, g = tokens(chunk_text), tokens(gold_text)
    if not c or not g:
        return False
    floor = min(MIN_OVERLAP_TOKENS, len(g))
    if _contains(c, g):
        return True
    if _contains(g, c):
        return len(c) >= floor
    overlap = max(_affix_overlap(c, g), _affix_overlap(g, c))
    return overlap >= floor and 2 * overlap >= len(c)

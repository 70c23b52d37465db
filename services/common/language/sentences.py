"""What a sentence is: the one sentence splitter of the project's answer path.

The extractive generator cuts evidence into the sentences it quotes with it, and the validator
cuts an answer into the sentences it checks with it, so a sentence the generator quotes is one
sentence to the validator (issue 14: four splitters had to agree and nothing tied them together).
The retrieval chunker keeps pysbd for ingest (it needs its rules for statute layout), but reads
its abbreviation list from here too.

Pure functions over strings; no service imports.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Sequence
from typing import Final

Span = tuple[int, int]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Abbreviations whose period never ends a sentence, and those that do not end one before a digit
# ("Rs. 10,000", "No. 45", "Sec. 420"). Lower case, without the final dot.
ABBREVIATIONS: Final = _words(
    """mr mrs ms dr prof sr jr vs v viz cf al approx hon'ble ors anr govt dept ltd inc co
    jan feb mar apr jun jul aug sep sept oct nov dec"""
)
ABBREVIATIONS_BEFORE_DIGIT: Final = _words(
    "no nos rs sec secs s ss art arts cl para paras vol p pp fig figs ch sch r rule o"
)
# Abbreviations after which pysbd breaks statute text ("s. 28", "per cent. per annum",
# "No. S.O."): the retrieval chunker undoes such a break whatever follows. Part of its index
# checksum (``SPLITTER_VERSION``): changing this list changes the chunks.
STATUTE_ABBREVIATIONS: Final = _words(
    """s ss sec secs sub-s rs no nos cl cls viz i.e e.g cent ibid art arts ch vol p pp para paras
    r o vict co ltd dr mr mrs govt dept w.e.f ors vs v illus expl cf approx sch min max"""
)
# The marks that end a sentence, in the scripts the splitter knows: one definition, which the
# validator also reads when it compares a restated passage with its source.
TERMINAL_MARKS: Final = ".!?…。！？।॥"
_TERMINAL_RE = re.compile(rf"[{re.escape(TERMINAL_MARKS)}]+[\"'”’)\]」』]*")
# Scripts whose sentences end with these marks run on without a space ("…徒刑。杀人者…",
# "…है। हत्या…"): a sentence ends there whatever follows.
_UNSPACED_TERMINALS = frozenset("。！？।॥")
_ITEM_NUMBER = re.compile(r"\d{1,3}")
_WORD_BEFORE_RE = re.compile(r"([^\W\d_][\w']*)$")
_BULLET_RE = re.compile(r"(?:[-*•·‣▪]|\d{1,3}[.)]|\(?[a-z]{1,3}\)|#{1,6})\s")
_OPENERS = frozenset("\"'“‘([{*#-•")
_FILLER = " \t\r\n.,;:"
_BIG = sys.maxsize


def list_marker_length(line: str) -> int:
    """Length of a leading list marker ("- ", "1. ", "(a) ", "## "), 0 when there is none."""
    match = _BULLET_RE.match(line)
    return match.end() if match else 0


def is_lead_in(sentence: str) -> bool:
    """A sentence that introduces what follows ("The Code punishes cheating as follows:").

    The validator exempts one from citation unless it is an answer's last sentence; StreamAnswer
    validates one together with the sentence it introduces.
    """
    return sentence.rstrip().endswith(":")


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, each with its runs of whitespace collapsed to one space.

    What the extractive generator quotes: a statute sentence that runs across lines ("done:" /
    "an illegal act, or" / "an act which …") stays whole, because a line starting in lower case
    continues the sentence before it.
    """
    return [" ".join(text[start:end].split()) for start, end in split_sentences(text)]


def split_sentences(text: str, transparent: Sequence[Span] = ()) -> list[Span]:
    """Sentence spans of ``text``; ``transparent`` spans (citations) never split and stick left.

    A citation right after a sentence's final period belongs to that sentence. Newlines end a
    sentence unless the next line starts in lower case (a soft-wrapped line).
    """
    transparent = sorted(transparent)
    skip = {start: end for start, end in transparent}
    cited_before = {end for _, end in transparent}
    n = len(text)
    boundaries: list[int] = []
    for match in _TERMINAL_RE.finditer(text):
        punct_start, end = match.span()
        if _inside(punct_start, transparent) or _in_list_marker(text, punct_start):
            continue
        if _numbers_an_item(text, boundaries[-1] if boundaries else 0, punct_start):
            continue
        crossed = False
        q = end
        while q < n:
            if text[q].isspace():
                q += 1
                crossed = True
            elif q in skip:  # a citation right after the mark belongs to its sentence
                end = q = skip[q]
                crossed = True
            else:
                break
        if _UNSPACED_TERMINALS.intersection(match.group()):
            boundaries.append(end)
            continue
        if q >= n:
            boundaries.append(end)
            continue
        following = text[q]
        if not crossed and not (punct_start in cited_before and following.isupper()):
            continue  # "3.5", "U.S."; but "[A].Murder" ends a sentence after its citation
        if following.islower():
            continue
        if text[punct_start] == "." and _is_abbreviation(text, punct_start, following):
            continue
        if following.isupper() or following.isdigit() or following in _OPENERS or q in skip:
            boundaries.append(end)
    for match in re.finditer(r"\n", text):
        nl = match.start()
        if _inside(nl, transparent):
            continue
        q = nl + 1
        while q < n and text[q] in " \t\r":
            q += 1
        if q < n and text[q].islower() and not list_marker_length(text[q:]):
            continue
        boundaries.append(nl)
    spans: list[tuple[int, int]] = []
    start = 0
    for boundary in [*sorted(set(boundaries)), n]:
        if boundary <= start:
            continue
        span = _trim(text, start, boundary)
        if span is not None:
            spans.append(span)
        start = boundary
    return _merge_citation_only(text, spans, transparent)


def _numbers_an_item(text: str, sentence_start: int, period: int) -> bool:
    """True when the period follows only an item number since the sentence began ("…]. 1. The
    expression …": an item quoted inline keeps its number, which ends no sentence)."""
    opened = max(sentence_start, text.rfind("\n", 0, period) + 1)
    return (
        text[period] == "."
        and period + 1 < len(text)
        and text[period + 1] in " \t"
        and _ITEM_NUMBER.fullmatch(text[opened:period].strip()) is not None
    )


def _in_list_marker(text: str, position: int) -> bool:
    """True when ``position`` (a period) is part of the list marker its line opens with
    ("1. Theft is ...", "10. ..."): it numbers an item, it does not end a sentence."""
    line_start = text.rfind("\n", 0, position) + 1
    lead = len(text[line_start:position]) - len(text[line_start:position].lstrip(" \t"))
    marker = list_marker_length(text[line_start + lead :])
    return marker > 0 and position < line_start + lead + marker


def _inside(position: int, spans: Sequence[tuple[int, int]]) -> bool:
    """True when ``position`` lies in one of ``spans`` (sorted, non-overlapping)."""
    i = bisect.bisect_right(spans, (position, _BIG)) - 1
    return i >= 0 and spans[i][0] <= position < spans[i][1]


def _is_abbreviation(text: str, period: int, following: str) -> bool:
    match = _WORD_BEFORE_RE.search(text, max(0, period - 20), period)
    if match is None:
        return False
    word = match.group(1).casefold()
    if len(word) == 1 and word.isalpha():
        return True  # initials and "i.e." / "e.g."
    if word in ABBREVIATIONS:
        return True
    return following.isdigit() and word in ABBREVIATIONS_BEFORE_DIGIT


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def _merge_citation_only(
    text: str, spans: list[tuple[int, int]], transparent: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Fold a piece that holds only citations into the sentence before it (or after, if first)."""
    merged: list[tuple[int, int]] = []
    pending_start: int | None = None
    for start, end in spans:
        if _only_transparent(text, start, end, transparent):
            if merged:
                merged[-1] = (merged[-1][0], end)
            elif pending_start is None:
                pending_start = start
            continue
        if pending_start is not None:
            start, pending_start = pending_start, None
        merged.append((start, end))
    if pending_start is not None:
        merged.append((pending_start, spans[-1][1]))
    return merged


def _only_transparent(
    text: str, start: int, end: int, transparent: Sequence[tuple[int, int]]
) -> bool:
    """True when ``text[start:end]`` is citations separated by whitespace or stray punctuation."""
    lo = bisect.bisect_left(transparent, (start, -1))
    position = start
    found = False
    for s, e in transparent[lo:]:
        if s >= end:
            break
        if text[position:s].strip(_FILLER):
            return False
        position = e
        found = True
    return found and not text[position:end].strip(_FILLER)

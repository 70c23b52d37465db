"""Numbers, amounts, dates and durations in text, normalised so "seven years" equals "7 years"."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from services.common.language.text import word_list

_SMALL: dict[str, int] = {
    word: value
    for value, word in enumerate(
        word_list(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
            "fifteen sixteen seventeen eighteen nineteen"
        )
    )
}
_TENS: dict[str, int] = {
    word: 10 * (i + 2)
    for i, word in enumerate(word_list("twenty thirty forty fifty sixty seventy eighty ninety"))
}
_MULTIPLIERS: dict[str, int] = {
    "hundred": 100,
    "thousand": 1_000,
    "lakh": 100_000,
    "lakhs": 100_000,
    "crore": 10_000_000,
    "crores": 10_000_000,
    "million": 1_000_000,
    "billion": 1_000_000_000,
}
_NUMBER_WORDS = frozenset(_SMALL) | frozenset(_TENS) | frozenset(_MULTIPLIERS)
_ORDINALS: dict[str, int] = {
    word: i + 1
    for i, word in enumerate(
        word_list(
            "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth"
        )
    )
}
_FRACTIONS: dict[str, int] = {
    "half": 2,
    "halves": 2,
    "third": 3,
    "thirds": 3,
    "fourth": 4,
    "fourths": 4,
    "quarter": 4,
    "quarters": 4,
    "fifth": 5,
    "fifths": 5,
    "sixth": 6,
    "eighth": 8,
    "tenth": 10,
}
_MONTHS: dict[str, int] = {
    word: i + 1
    for i, word in enumerate(
        word_list(
            "january february march april may june july august september october november december"
        )
    )
}
_UNITS: dict[str, str] = {
    **dict.fromkeys(("year", "years", "yr", "yrs"), "year"),
    **dict.fromkeys(("month", "months"), "month"),
    **dict.fromkeys(("week", "weeks"), "week"),
    **dict.fromkeys(("day", "days"), "day"),
    **dict.fromkeys(("hour", "hours", "hr", "hrs"), "hour"),
    **dict.fromkeys(("minute", "minutes", "min", "mins"), "minute"),
    **dict.fromkeys(("second", "seconds"), "second"),
    **dict.fromkeys(("percent", "%"), "percent"),
    **dict.fromkeys(("rupee", "rupees"), "rupee"),
    **dict.fromkeys(("dollar", "dollars"), "dollar"),
}
_CURRENCY_PREFIX: dict[str, str] = {"rs": "rupee", "inr": "rupee", "₹": "rupee", "$": "dollar"}
# Words after which a number names a provision rather than a quantity ("Section 420"); such a
# number may also be matched by the number inside a cited evidence id.
_REFERENCE_WORDS = frozenset(
    word_list(
        "section sections sec secs s ss article articles art arts chapter chapters clause clauses "
        "rule rules order schedule act no nos para paragraph paragraphs §"
    )
)
_LIST_JOINERS = frozenset({"and", "to", "or", "&"})
# Units whose values must match exactly in kind: a month name is not the number 3, "third"
# is not "three" (but a fraction is the share a percentage states: ``_RATIO``).
STRICT_UNITS = frozenset({"calendar_month", "fraction", "ordinal"})
# An evidence number displaces an equal claim number only when it shares at least this many
# context terms with the claim number (one shared word is too weak a signal).
MIN_RIVAL_FIT = 2

# A middle dot between digits is a decimal point ("34·3%", Lancet style).
_TOKEN_RE = re.compile(
    r"(?P<ord>(?<![\w,])(?<![0-9][.·])[0-9]+(?:st|nd|rd|th)(?!\w))"
    r"|(?P<num>(?<![\w,])(?<![0-9][.·])[0-9]+(?:[.,·][0-9]+)*(?!\w))"
    r"|(?P<word>[^\W\d_]+)"
    r"|(?P<sym>[%₹$§])",
    re.IGNORECASE,
)
# Cheap pre-check: text without a digit, a symbol or one of these words holds no quantity.
_ANCHOR_CHARS_RE = re.compile(r"[0-9%₹$§]")
_ANCHOR_WORDS = frozenset({*_NUMBER_WORDS, *_ORDINALS, *_MONTHS, *_FRACTIONS})
_THOUSANDS_RE = re.compile(r"[0-9]{1,3}(?:,[0-9]{2,3})+(?:\.[0-9]+)?")
# What may stand between two numbers written as a pair (a range, a list, a comparison).
_MAX_PAIR_GAP = 12
_PAIR_JOINER_RE = re.compile(
    r"\b(?:to|and|or|vs|versus|through|till|until|before|after|circa|ca|c|about)\b"
)
# Primes, quotes and arrows too: 71' 9" (feet and inches), 5'-->3' (strand direction).
_PAIR_GAP_CHARS = " \t,.;:()/–—‐-−%+±×'\"’‘“”<>→"
# Between two provision numbers the reference word may repeat: "section 224 or section 225".
_PAIR_REFERENCE_RE = re.compile(
    r"\b(?:sections?|secs?|articles?|arts?|clauses?|rules?|paras?|paragraphs?|chapters?|s|ss)\b"
)
# What makes a pair a range: "-2.63 to 0.19", "30·4-38·2", "10% – 20%".
_RANGE_GAP_RE = re.compile(r"\s*%?\s*(?:to|through|till|until|[-–—‐−])\s*", re.IGNORECASE)
# A minus, hyphen or en dash right before a digit is a sign when it follows a space, an opening
# bracket or a separator ("CI, −43.61% to −22.81%"), unless a number comes just before it: then
# it joins a range ("10 – 20"); right after a digit or letter it always joins ("30·4-38·2", "U-20").
_SIGNS = "-−–"
_SIGN_OPENERS = "([,;:=<>/"
_SIGNED_RE = re.compile(r"[-−–][0-9]")  # a cheap pre-check; ``_signed`` decides


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number in text: value, unit ("" if none), offsets, and whether it names a provision."""

    value: float
    unit: str
    start: int
    end: int
    reference: bool = False

    @property
    def term(self) -> str:
        """Canonical spelling used as a content term ("7", "10000", "0.25")."""
        return canonical(self.value)


class _Tok(NamedTuple):
    kind: str
    text: str
    start: int
    end: int


def canonical(value: float) -> str:
    """One spelling per value: integers without a decimal point, others to 6 significant digits."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e18:
        return str(int(value))
    return format(value, ".6g")


def extract_quantities(
    text: str, *, lenient_months: bool = False, words: Iterable[str] | None = None
) -> tuple[Quantity, ...]:
    """Every number, amount, date part and duration in ``text``, in order of appearance.

    ``lenient_months`` (used for evidence) counts every month name; in claims a month name only
    counts next to a number, because "may" and "march" are also ordinary words. ``words``, the
    text's lower-cased words when the caller has them, only speeds up the pre-check.
    """
    if not _ANCHOR_CHARS_RE.search(text):
        vocabulary = (
            {w.casefold() for w in re.findall(r"[^\W\d_]+", text)} if words is None else words
        )
        if _ANCHOR_WORDS.isdisjoint(vocabulary):
            return ()
    new = tuple.__new__  # _Tok(...) without the NamedTuple's Python-level __new__ (hot loop)
    toks: list[_Tok] = [
        new(_Tok, (m.lastgroup or "", m[0].casefold(), *m.span())) for m in _TOKEN_RE.finditer(text)
    ]
    if ("-" in text or "−" in text or "–" in text) and _SIGNED_RE.search(text):
        toks = [_signed(text, t) if t.kind == "num" else t for t in toks]
    found: list[Quantity] = []
    reference_until = -1
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok.kind == "word" and tok.text not in _ANCHOR_WORDS:
            i += 1  # most words: no quantity starts here (the branches below need an anchor)
            continue
        if tok.kind == "num":
            reference = _is_reference(text, toks, i, reference_until)
            values: list[float] = _parse_digits(tok.text)
            j = i + 1
            if (
                len(values) == 1
                and j < len(toks)
                and toks[j].text in _MULTIPLIERS
                and _gap(text, toks[i], toks[j], " \t")
            ):
                values = [values[0] * _MULTIPLIERS[toks[j].text]]
                j += 1
            unit, j = _unit_after(text, toks, j - 1)
            unit = unit or _currency_before(text, toks, i)
            for value in values:
                found.append(Quantity(value, unit, tok.start, tok.end, reference))
            if reference:
                reference_until = j
            i = j
        elif tok.kind == "ord":
            reference = _is_reference(text, toks, i, reference_until)
            found.append(Quantity(float(tok.text[:-2]), "ordinal", tok.start, tok.end, reference))
            i += 1
        elif tok.kind == "word" and tok.text in _NUMBER_WORDS:
            reference = _is_reference(text, toks, i, reference_until)
            j = i
            while j + 1 < len(toks) and _continues_number(text, toks, j):
                j += 1
            words = [t.text for t in toks[i : j + 1]]
            fraction = _fraction_after(text, toks, j)
            if fraction and len(words) == 1 and words[0] in _SMALL:
                found.append(
                    Quantity(_SMALL[words[0]] / fraction, "fraction", tok.start, toks[j + 1].end)
                )
                i = j + 2
                continue
            unit, k = _unit_after(text, toks, j)
            unit = unit or _currency_before(text, toks, i)
            values = [_as_float(v) for v in _parse_words(words)]
            # A bare "one" is a pronoun far more often than a quantity ("one of the", "any one").
            if not (words == ["one"] and not unit):
                for value in values:
                    found.append(Quantity(float(value), unit, tok.start, toks[j].end, reference))
            i = k if unit else j + 1
        elif tok.kind == "word" and tok.text in _ORDINALS and not _ordinal_is_idiom(toks, i):
            found.append(Quantity(float(_ORDINALS[tok.text]), "ordinal", tok.start, tok.end))
            i += 1
        elif tok.kind == "word" and tok.text in _MONTHS:
            if lenient_months or _next_to_number(text, toks, i):
                found.append(
                    Quantity(float(_MONTHS[tok.text]), "calendar_month", tok.start, tok.end)
                )
            i += 1
        else:
            i += 1
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Mismatch:
    """A claim quantity the evidence does not back, and the evidence value in its place if any."""

    quantity: Quantity
    instead: Quantity | None = None


def unsupported(
    claim: Sequence[tuple[Quantity, frozenset[str]]],
    evidence: Sequence[tuple[Quantity, frozenset[str]]],
) -> list[Mismatch]:
    """Claim quantities that the evidence does not back, each given with its context terms.

    A claim quantity is backed when the evidence holds an equal value with a compatible unit
    (equal, either side without one, a duration in another unit, a percentage for a fraction:
    ``_matches``) and, among the evidence quantities of its kind, none
    whose context (nearby content terms) fits the claim quantity's context better than every
    equal one does. So "group 6 were protected" fails against "six macaques in group 3 were
    protected": the 3 sits where the claim put the 6.
    """
    missing: list[Mismatch] = []
    for q, context in claim:
        same = [len(context & c) for e, c in evidence if _matches(q, e)]
        if not same:
            missing.append(Mismatch(q))
            continue
        rivals = [(len(context & c), e) for e, c in evidence if _same_kind(q, e)]
        best_fit, best = max(rivals, key=lambda r: r[0])
        if best_fit >= MIN_RIVAL_FIT and best_fit > max(same):
            missing.append(Mismatch(q, best))
    return missing


def displaced_references(
    claim: Sequence[tuple[Quantity, frozenset[str]]],
    evidence: Sequence[tuple[Quantity, frozenset[str]]],
) -> list[Mismatch]:
    """Claim provision numbers where the evidence cites another provision in the same words.

    For a provision number that the cited id names but the text does not hold ("acts specified
    in section 158" citing IPC_158_0): it fails when an evidence provision number with another
    value fits its context as well as ``unsupported`` requires of a rival ("acts specified in
    section 141").
    """
    missing: list[Mismatch] = []
    for q, context in claim:
        rivals = [(len(context & c), e) for e, c in evidence if e.reference and e.term != q.term]
        if rivals:
            fit, best = max(rivals, key=lambda r: r[0])
            if fit >= MIN_RIVAL_FIT:
                missing.append(Mismatch(q, best))
    return missing


def ordered_pairs(text: str, quantities: Sequence[Quantity]) -> frozenset[tuple[str, str]]:
    """Pairs of different numbers written next to each other ("1937 to 1945", "26–56", "35% and
    55%", "71' 9\"", "1590 – before 1638", "section 224 or section 225"), in text order; a claim
    that reverses a pair its evidence writes the other way round has swapped them. Month names
    and ordinals are left out: "June 12" and "12 June" agree.
    """
    plain = [q for q in quantities if q.unit not in STRICT_UNITS]
    pairs: set[tuple[str, str]] = set()
    for left, right in itertools.pairwise(plain):
        if left.term == right.term or right.start - left.end > 2 * _MAX_PAIR_GAP:
            continue
        gap = text[left.end : right.start].casefold()
        if left.reference and right.reference:
            gap = _PAIR_REFERENCE_RE.sub("", gap)
        if len(gap) <= _MAX_PAIR_GAP and not _PAIR_JOINER_RE.sub("", gap).strip(_PAIR_GAP_CHARS):
            pairs.add((left.term, right.term))
    return frozenset(pairs)


def ranges(text: str, quantities: Sequence[Quantity]) -> frozenset[tuple[str, str]]:
    """The pairs written as a range: "-2.63 to 0.19", "30·4-38·2" (see ``repaired``)."""
    if len(quantities) < 2:
        return frozenset()
    plain = [q for q in quantities if q.unit not in STRICT_UNITS]
    return frozenset(
        (left.term, right.term)
        for left, right in itertools.pairwise(plain)
        if left.term != right.term
        and right.start - left.end <= _MAX_PAIR_GAP
        and _RANGE_GAP_RE.fullmatch(text, left.end, right.start)
    )


def swapped(
    claim_pairs: frozenset[tuple[str, str]], evidence_pairs: frozenset[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Claim pairs that the evidence only writes in the opposite order."""
    return sorted(
        (a, b) for a, b in claim_pairs if (b, a) in evidence_pairs and (a, b) not in evidence_pairs
    )


def repaired(
    claim_ranges: frozenset[tuple[str, str]], evidence_pairs: frozenset[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Claim ranges whose ends the evidence pairs with other numbers and never with each other.

    "-2.63 to 0.19" fails against "-2.63 to 0.02 ... -0.60 to 0.19": both ends are in the
    evidence, but as the ends of two other intervals.
    """
    has_right = {a for a, _ in evidence_pairs}
    has_left = {b for _, b in evidence_pairs}
    return sorted(
        (a, b)
        for a, b in claim_ranges
        if a in has_right
        and b in has_left
        and (a, b) not in evidence_pairs
        and (b, a) not in evidence_pairs
    )


@dataclass(frozen=True, slots=True)
class Date:
    """A calendar date as written: its month, and whichever of day and year the text states."""

    month: Quantity
    day: Quantity | None = None
    year: Quantity | None = None

    @property
    def start(self) -> int:
        return min(q.start for q in self._parts())

    @property
    def end(self) -> int:
        return max(q.end for q in self._parts())

    def shared(self, other: Date) -> tuple[Quantity, ...] | None:
        """The day and year that ``other`` states too, when the two can be one date (same
        month, no stated part in conflict, a day or year in common); None when they cannot."""
        if self.month.value != other.month.value:
            return None
        shared: list[Quantity] = []
        for mine, theirs in ((self.day, other.day), (self.year, other.year)):
            if mine is not None and theirs is not None:
                if mine.value != theirs.value:
                    return None
                shared.append(mine)
        return tuple(shared) or None

    def _parts(self) -> tuple[Quantity, ...]:
        return tuple(q for q in (self.month, self.day, self.year) if q is not None)


def extract_dates(text: str, quantities: Sequence[Quantity]) -> tuple[Date, ...]:
    """Dates built from a month name and the numbers written next to it: "March 9, 1909",
    "9 March 1909", "1945 May 17", "March 9", "9 March", "March 1909"."""
    if not quantities or not any(q.unit == "calendar_month" for q in quantities):
        return ()
    found: list[Date] = []
    for k, month in enumerate(quantities):
        if month.unit != "calendar_month":
            continue
        before = quantities[k - 1] if k else None
        after = quantities[k + 1] if k + 1 < len(quantities) else None
        later = quantities[k + 2] if k + 2 < len(quantities) else None
        if before and _is_day(before) and _date_gap(text, before, month, "of"):
            year = (
                after if after and _is_year(after) and _date_gap(text, month, after, ",") else None
            )
            found.append(Date(month, before, year))
        elif (
            before
            and after
            and _is_year(before)
            and _is_day(after)
            and _date_gap(text, before, month, "")
            and _date_gap(text, month, after, "")
        ):
            found.append(Date(month, after, before))
        elif after and _is_day(after) and _date_gap(text, month, after, ""):
            year = (
                later if later and _is_year(later) and _date_gap(text, after, later, ",") else None
            )
            found.append(Date(month, after, year))
        elif after and _is_year(after) and _date_gap(text, month, after, ""):
            found.append(Date(month, None, after))
    return tuple(found)


def compare_dates(
    claim: Sequence[Date], evidence: Sequence[Date]
) -> tuple[list[Date], set[Quantity]]:
    """Claim dates that no evidence date can be, and the claim's day and year numbers that an
    evidence date backs ("1945 May 17" is "17 May 1945": its numbers need no other check).

    Only checked when the evidence writes dates at all: a date the evidence gives in another
    form ("1909-03-09") is left to the number check.
    """
    if not claim or not evidence:
        return [], set()
    wrong: list[Date] = []
    backed: set[Quantity] = set()
    for date in claim:
        matches = [parts for e in evidence if (parts := date.shared(e)) is not None]
        if not matches:
            wrong.append(date)
        for parts in matches:
            backed.update(parts)
    return wrong, backed


def _is_day(q: Quantity) -> bool:
    return q.unit in ("", "ordinal") and q.value == int(q.value) and 1 <= q.value <= 31


def _is_year(q: Quantity) -> bool:
    return not q.unit and q.value == int(q.value) and 1000 <= q.value <= 2999


def _date_gap(text: str, left: Quantity, right: Quantity, extra: str) -> bool:
    """True when only spaces, or ``extra`` (a comma, or "of" after a day) amid them, separate
    the two."""
    gap = text[left.end : right.start]
    return 0 < len(gap) <= 5 and gap.strip() in ("", extra)


def _same_kind(claim: Quantity, evidence: Quantity) -> bool:
    if claim.unit in _RATIO and evidence.unit in _RATIO:
        return True
    if claim.unit in STRICT_UNITS or evidence.unit in STRICT_UNITS:
        return claim.unit == evidence.unit
    if claim.unit in _IN_BASE and evidence.unit in _IN_BASE:
        return _IN_BASE[claim.unit][0] == _IN_BASE[evidence.unit][0]
    return not claim.unit or not evidence.unit or claim.unit == evidence.unit


# Durations in one unit stated in another: "12 months" is "one year", "14 days" "two weeks".
_IN_BASE: dict[str, tuple[str, float]] = {
    "year": ("month", 12.0),
    "month": ("month", 1.0),
    "week": ("day", 7.0),
    "day": ("day", 1.0),
}


# A share written as a percentage or as a fraction: "25 per cent" is "one-fourth".
_RATIO: dict[str, float] = {"percent": 0.01, "fraction": 1.0}


def amount(q: Quantity) -> tuple[str, str]:
    """The kind and value amounts are compared by, with the tables ``_matches`` equates them by:
    a duration in its base unit ("one year" and "12 months" are both ("month", "12")), a share
    as a fraction ("25 per cent" and "one-fourth" are both ("share", "0.25")), anything else as
    written ((unit, term))."""
    if q.unit in _IN_BASE:
        base, per = _IN_BASE[q.unit]
        return base, canonical(q.value * per)
    if q.unit in _RATIO:
        return "share", canonical(q.value * _RATIO[q.unit])
    return q.unit, q.term


def _matches(claim: Quantity, evidence: Quantity) -> bool:
    # A claim may drop a minus sign that a word carries ("reduced by 33%" for "−33%"), but a
    # negative claim number needs a negative evidence number.
    value = evidence.value if claim.value < 0 else abs(evidence.value)
    if claim.unit != evidence.unit and claim.unit in _RATIO and evidence.unit in _RATIO:
        return math.isclose(
            claim.value * _RATIO[claim.unit], value * _RATIO[evidence.unit], rel_tol=1e-9
        )
    if claim.unit != evidence.unit and claim.unit in _IN_BASE and evidence.unit in _IN_BASE:
        (base, per_claim), (other, per_evidence) = _IN_BASE[claim.unit], _IN_BASE[evidence.unit]
        return base == other and math.isclose(
            claim.value * per_claim, value * per_evidence, rel_tol=1e-9
        )
    if not math.isclose(claim.value, value, rel_tol=1e-9, abs_tol=1e-12):
        return False
    return _same_kind(claim, evidence)


def _signed(text: str, tok: _Tok) -> _Tok:
    """``tok`` with the sign written right before it, if any (see ``_SIGNS``)."""
    sign = tok.start - 1
    if sign < 0 or text[sign] not in _SIGNS:
        return tok
    if sign and not (text[sign - 1].isspace() or text[sign - 1] in _SIGN_OPENERS):
        return tok
    if _follows_number(text, sign):
        return tok
    return _Tok(tok.kind, "-" + tok.text, sign, tok.end)


def _follows_number(text: str, position: int) -> bool:
    before = text[max(position - 8, 0) : position].rstrip()
    return bool(before) and (before[-1].isdigit() or before[-1] == "%")


def _parse_digits(text: str) -> list[float]:
    if text[0] in _SIGNS:
        values = _parse_digits(text[1:])
        return [-values[0], *values[1:]]
    if "·" in text:
        text = text.replace("·", ".")
    if "," in text:
        if _THOUSANDS_RE.fullmatch(text):
            return [float(text.replace(",", ""))]
        return [v for part in text.split(",") for v in _parse_digits(part)]
    if text.count(".") > 1:
        return [float(part) for part in text.split(".") if part]
    return [float(text)]


def _as_float(value: int) -> float:
    """A spelled-out number as a float; one too large for a float ("hundred" said 160 times)
    is infinite, a number no evidence holds, rather than an OverflowError."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _parse_words(words: Sequence[str]) -> list[int]:
    """Numbers spelled out in ``words``; a break in the grammar starts a new number."""
    numbers: list[int] = []
    total = current = 0
    last = ""
    started = False
    for word in words:
        if word == "and":
            continue
        if word in _SMALL:
            if last in ("small", "small+") or (last == "tens" and current % 10):
                numbers.append(total + current)
                total = current = 0
            current += _SMALL[word]
            last = "small"
        elif word in _TENS:
            if last in ("small", "tens", "small+") and current % 100:
                numbers.append(total + current)
                total = current = 0
            current += _TENS[word]
            last = "tens"
        elif word == "hundred":
            current = (current or 1) * 100
            last = "hundred"
        else:
            multiplier = _MULTIPLIERS[word]
            total += (current or 1) * multiplier
            current = 0
            last = "mult"
        started = True
    if started:
        numbers.append(total + current)
    return numbers


def _gap(text: str, left: _Tok, right: _Tok, allowed: str) -> bool:
    between = text[left.end : right.start]
    return len(between) <= 3 and all(c in allowed for c in between)


def _continues_number(text: str, toks: Sequence[_Tok], j: int) -> bool:
    nxt = toks[j + 1]
    if not _gap(text, toks[j], nxt, " \t-‐–"):
        return False
    if nxt.text in _NUMBER_WORDS:
        return True
    # "and" joins only after hundred/thousand: "one hundred and twenty", not "two and three".
    return (
        nxt.text == "and"
        and toks[j].text in _MULTIPLIERS
        and j + 2 < len(toks)
        and toks[j + 2].text in _NUMBER_WORDS
        and toks[j + 2].text not in _MULTIPLIERS
    )


def _fraction_after(text: str, toks: Sequence[_Tok], j: int) -> int:
    if (
        j + 1 < len(toks)
        and toks[j + 1].text in _FRACTIONS
        and _gap(text, toks[j], toks[j + 1], " \t-‐–")
    ):
        return _FRACTIONS[toks[j + 1].text]
    return 0


def _unit_after(text: str, toks: Sequence[_Tok], j: int) -> tuple[str, int]:
    """Unit right after token ``j`` and the index after it; ("", j + 1) when there is none."""
    k = j + 1
    if k < len(toks) and _gap(text, toks[j], toks[k], " \t-‐–"):
        word = toks[k].text
        if word == "per" and k + 1 < len(toks) and toks[k + 1].text == "cent":
            return "percent", k + 2
        if word in _UNITS:
            return _UNITS[word], k + 1
    return "", k


def _currency_before(text: str, toks: Sequence[_Tok], i: int) -> str:
    if i > 0 and toks[i - 1].text in _CURRENCY_PREFIX and _gap(text, toks[i - 1], toks[i], " \t."):
        return _CURRENCY_PREFIX[toks[i - 1].text]
    return ""


def _is_reference(text: str, toks: Sequence[_Tok], i: int, reference_until: int) -> bool:
    if i == 0:
        return False
    previous = toks[i - 1]
    if previous.text in _REFERENCE_WORDS and _gap(text, previous, toks[i], " \t.()"):
        return True
    # Lists of provisions: "sections 415 and 420", "Sections 299 to 304".
    if i <= reference_until + 1 and previous.text in _LIST_JOINERS:
        return True
    return i == reference_until and _gap(text, previous, toks[i], " \t,-–")


def _ordinal_is_idiom(toks: Sequence[_Tok], i: int) -> bool:
    """ "at first" and "first of all" are not ordinals; "second" after a number is time."""
    word = toks[i].text
    before = toks[i - 1].text if i else ""
    after = toks[i + 1].text if i + 1 < len(toks) else ""
    after2 = toks[i + 2].text if i + 2 < len(toks) else ""
    if word == "first":
        return before == "at" or (after == "of" and after2 == "all")
    return word == "second" and (before.isdigit() or before in _NUMBER_WORDS)


def _next_to_number(text: str, toks: Sequence[_Tok], i: int) -> bool:
    before = toks[i - 1] if i else None
    after = toks[i + 1] if i + 1 < len(toks) else None
    return bool(
        (before and before.kind in ("num", "ord") and _gap(text, before, toks[i], " \t"))
        or (after and after.kind in ("num", "ord") and _gap(text, toks[i], after, " \t,"))
    )

"""Section references: the one parser of "section 420", "s. 302 IPC", "Article 21", "IPC 498A",
and of a section number asked alone ("420").

Retrieval reads them to boost the named provisions; synthesis's sufficiency reads them to
require evidence from those provisions and to take them out of the question's key terms; the
corpus loader canonicalises section numbers with the same ``normalise_section``. Pure.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from services.common.language.acts import ACTS

# Act names and abbreviations as people write them → act codes, from the one registry
# (data/corpora/acts.json, ``acts.ACTS``). Dotted abbreviations need their dots ("i.e.a."), or
# "i.e. a" would name the Evidence Act.
ACT_ALIASES: Final[Mapping[str, str]] = {act.pattern: act.code for act in ACTS}
# "Article 21" with no act named: the act whose provisions are articles (the Constitution).
_ARTICLE_ACT: Final = next((act.code for act in ACTS if act.provision == "article"), None)
_ACT_ALTERNATIVES: Final = "|".join(f"(?P<a{i}>{p})" for i, p in enumerate(ACT_ALIASES))
_ACT = re.compile(rf"\b(?:{_ACT_ALTERNATIVES})(?!\w)", re.I)
_ANY_ACT: Final = "(?:" + "|".join(ACT_ALIASES) + ")"
# Any registered act's name or abbreviation (case-insensitive, no groups), for patterns built on
# it elsewhere (the validator's attributions: "Under the Motor Vehicles Act,").
ACT_PATTERN: Final = _ANY_ACT
_ACT_CODES: Final = tuple(ACT_ALIASES.values())
_REGISTERED_CODES: Final = frozenset(_ACT_CODES)
_BARE_CODE: Final = {act.code: act.bare_code for act in ACTS}

_NUMBER = r"\d+(?:-?[A-Za-z]{1,2})?\b"
# A number written without a section word, next to an act ("302 IPC", "IPC 420"): at most three
# digits. No registered act has a thousand sections, and "Indian Penal Code 1860" names its year.
_BARE_NUMBER = r"\d{1,3}(?:-?[A-Za-z]{1,2})?\b"
# "section 420", "sec. 498A", "s. 302", "ss. 299 and 300", "u/s 379", "Article 21A", "art 14",
# "law 420", "§ 302".
_KIND = r"\bsections?|\bsecs?\.?|\bss?\.|\bu/ss?\.?|\barticles?|\barts?\.?|\blaws?|§+"
# A sub-division written after a section number: "(2)", "(a)", "(ii)", "(2)(a)" (rule M of
# docs/EVALUATION.md). Part of the reference, so no key term; not a section of its own.
_SUB = r"(?:\s?\((?:\d{1,3}|[ivx]{1,5}|[a-z])\))*"
# "read with" / "r/w": how a lawyer joins provisions charged together ("302 r/w 34").
_READ_WITH = r"(?:r\s?/\s?w\b\.?|read\s+with\b)"
# What joins the numbers of a list: "and" ("ss. 299 and 300"), "r/w", ... or a range's "to", "-",
# "–", "—" ("sections 378 to 382", rule Q of docs/EVALUATION.md).
_RANGE = r"(?:to|-|\u2013|\u2014)"
_JOIN = rf"(?:,|and|or|&|{_READ_WITH}|/|{_RANGE})"
# A quantity is no list member: "section 304 and 10 years", "section 326 to 7 years".
_NOT_QUANTITY = r"(?!\s*(?:years?|yrs?|months?|weeks?|days?|hours?|rupees?|rs\b|lakhs?|crores?))"
_PREFIXED = re.compile(
    rf"(?P<kind>{_KIND})"
    rf"\s*(?P<num>{_NUMBER}){_SUB}"
    rf"(?P<more>(?:\s*{_JOIN}\s*(?:(?:{_KIND})\s*)?{_NUMBER}{_SUB}{_NOT_QUANTITY})*)",
    re.I,
)
# Between two numbers of a list, the joiner of a range.
_RANGE_JOINER = re.compile(rf"\s*{_RANGE}\s*(?:(?:{_KIND})\s*)?", re.I)
# A bare number right before "r/w" / "read with" and another number is a section ("302 r/w 34
# IPC"); the span takes the connector in, so it is no key term.
_NUMBER_READ_WITH = re.compile(
    rf"\b(?P<num>{_NUMBER}){_SUB}\s*{_READ_WITH}(?=\s*(?:(?:{_KIND})\s*)?\d)", re.I
)
# A sub-division's number is not a section: the list's numbers are read outside parentheses.
_PARENTHESISED = re.compile(r"\([^()]*\)")
# Bare numbers count right before an act name: "302 IPC", "420 of the IPC", and a list of them,
# "379 and 380 IPC", "379, 380 and 381 I.P.C.", "378-382 IPC" (rule Q); not a sum of money
# ("Rs 500 IPC"). The list is read whole, the act being optional, so that a list no act follows
# is passed over once, not tried again from each of its numbers (quadratic).
_NUMBERS_THEN_ACT = re.compile(
    r"(?<![\u20b9$])(?<!\brs)(?<!\brs\.)(?<!\brs\s)(?<!\brs\.\s)(?<!\u20b9\s)"
    rf"\b(?P<num>{_BARE_NUMBER}){_SUB}"
    rf"(?P<more>(?:\s*{_JOIN}\s*{_BARE_NUMBER}{_SUB}{_NOT_QUANTITY})*)"
    rf"(?P<act>\s+(?:of\s+(?:the\s+)?)?(?=\b{_ANY_ACT}(?!\w)))?",
    re.I,
)
# ... and right after one: "IPC 420", "IPC s 420" (an "s" without its dot only here: "it's 5
# years" names no section 5), and a list of them read whole, as before an act: "IPC 379 and
# 380", "IPC 379, 380 and 381", "IPC 378 to 380" (rule U), not a quantity ("IPC 420 and 7 years").
_ACT_THEN_NUMBER = re.compile(
    rf"\b{_ANY_ACT}\s+(?:s\s+)?(?P<num>{_BARE_NUMBER}){_SUB}"
    rf"(?P<more>(?:\s*{_JOIN}\s*{_BARE_NUMBER}{_SUB}{_NOT_QUANTITY})*)",
    re.I,
)
# ... or as the whole query: "420", "498A", "498-A", "379?" (what someone types to look a
# provision up; GetDocument resolves the same). Not inside a sentence: "3 years" never counts,
# and not an ordinal: "1st" or "10th" alone is not section 1ST.
# (Its tail is written so that a space can be read one way only: "\s*[?.!]*\s*" read a run of
# spaces followed by anything else in quadratic time, trying each split between its two "\s*".)
_WHOLE_NUMBER = re.compile(
    rf"^\s*(?!\d+(?:st|nd|rd|th)\b)(?P<num>{_NUMBER})\s*(?:[?.!]+\s*)?$", re.I
)
_NUM_IN_LIST = re.compile(_NUMBER)
# A range names the sections in it when it is short (rule Q): at most ten, end to end.
_MAX_RANGE: Final = 10
_NUMBER_AND_LETTERS = re.compile(r"(\d+)([A-Z]?)")

# One provision reference in any form the parser reads ("section 420", "§ 302", "s. 379",
# "IPC 420", "IPC s 420", "302 IPC", "379 and 380 IPC"), for patterns built on it elsewhere (the
# intent classifier's "What is section 420?" cue), so that no other module keeps its own list of
# the ways to write one.
REFERENCE_PATTERN: Final = (
    rf"(?:(?:{_KIND})\s*{_NUMBER}|\b{_ANY_ACT}\s+(?:s\s+)?{_BARE_NUMBER}"
    rf"|\b{_BARE_NUMBER}(?:\s*{_JOIN}\s*{_BARE_NUMBER})*\s+(?:of\s+(?:the\s+)?)?{_ANY_ACT}"
    r"(?!\w))"
)


@dataclass(frozen=True, slots=True)
class SectionRef:
    """A provision named in a query; ``act`` is None when the query does not say which act."""

    section: str
    act: str | None = None


def normalise_section(raw: object) -> str:
    """Canonical section number: ``"21A."`` → ``21A``, ``"239 A A"`` → ``239AA``, ``"498-A"`` →
    ``498A``, 420 → ``420``. The corpus loader and the query parser both use it."""
    return re.sub(r"[\s\-]+", "", str(raw)).rstrip(".").upper()


_Group = tuple[int, int, list[tuple[int, str]], bool]


def _groups(query: str) -> list[_Group]:
    """(start, end, numbers, is_article) per reference; a list "ss. 299 and 300" is one group."""
    groups: list[_Group] = []
    for match in _PREFIXED.finditer(query):
        is_article = match.group("kind").lower().startswith("art")
        groups.append((match.start(), match.end(), _list_numbers(match), is_article))
    inside = _Spans([(a, b) for a, b, _, _ in groups])
    for match in _NUMBERS_THEN_ACT.finditer(query):
        start = match.start("num")
        if match.group("act") is not None and not inside.cover(start):
            groups.append((start, match.end("more"), _list_numbers(match), False))
    for pattern in (_ACT_THEN_NUMBER, _NUMBER_READ_WITH, _WHOLE_NUMBER):
        # A number already inside a reference is not read again. A pattern's own matches never
        # overlap, so each is tested against the groups found before the pattern ran.
        inside = _Spans([(a, b) for a, b, _, _ in groups])
        for match in pattern.finditer(query):
            start = match.start("num")
            if inside.cover(start):
                continue
            if pattern is _ACT_THEN_NUMBER:  # "IPC 379 and 380": a list, read whole
                groups.append((start, match.end("more"), _list_numbers(match), False))
                continue
            # "302 r/w": the connector is part of the reference (no key term).
            end = match.end() if pattern is _NUMBER_READ_WITH else match.end("num")
            groups.append((start, end, [(start, match.group("num"))], False))
    return groups


def _list_numbers(match: re.Match[str]) -> list[tuple[int, str]]:
    """(position, number) of each section a list names ("ss. 299 and 300", "379, 380 and 381
    IPC"), a short range's sections in between included ("378 to 382": 379, 380, 381 at the
    position of 382)."""
    numbers = [(match.start("num"), match.group("num"))]
    more_start = match.start("more")
    more = _PARENTHESISED.sub(lambda m: " " * len(m.group()), match.group("more"))
    joiner_start = 0
    for number in _NUM_IN_LIST.finditer(more):
        position = more_start + number.start()
        if _RANGE_JOINER.fullmatch(more, joiner_start, number.start()):
            between = _in_range(numbers[-1][1], number.group())
            numbers += [(position, section) for section in between]
        numbers.append((position, number.group()))
        joiner_start = number.end()
    return numbers


def _in_range(first: str, last: str) -> list[str]:
    """The sections strictly between a range's ends when it is short: plain numbers ("378",
    "382": 379, 380, 381) or one number's letters ("376A", "376E": 376B, 376C, 376D). None for a
    long, reversed or mixed range (its ends are read, nothing is guessed between them: the
    parser does not know which lettered sections a corpus holds)."""
    a = _NUMBER_AND_LETTERS.fullmatch(normalise_section(first))
    b = _NUMBER_AND_LETTERS.fullmatch(normalise_section(last))
    if a is None or b is None:
        return []
    (number_a, letter_a), (number_b, letter_b) = a.groups(), b.groups()
    if not letter_a and not letter_b:
        low, high = int(number_a), int(number_b)
        return [str(n) for n in range(low + 1, high)] if 0 < high - low < _MAX_RANGE else []
    if number_a == number_b and letter_a and letter_b:
        low, high = ord(letter_a), ord(letter_b)
        if 0 < high - low < _MAX_RANGE:
            return [f"{number_a}{chr(c)}" for c in range(low + 1, high)]
    return []


class _Spans:
    """Half-open spans, asked whether one covers a position: in log time, so that a text of
    many references is read in n log n (testing every span for every match was quadratic)."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        spans.sort()
        self._starts = [a for a, _ in spans]
        # The furthest end among the spans that start at or before each one (spans may overlap).
        self._reach: list[int] = []
        for _, b in spans:
            self._reach.append(max(b, self._reach[-1]) if self._reach else b)

    def cover(self, position: int) -> bool:
        """Whether some span ``a..b`` has ``a <= position < b``."""
        i = bisect_right(self._starts, position)
        return i > 0 and self._reach[i - 1] > position


def _act_matches(query: str) -> list[tuple[re.Match[str], str]]:
    """Each act name or abbreviation in ``query``, with its act code."""
    found: list[tuple[re.Match[str], str]] = []
    for match in _ACT.finditer(query):
        group = next(name for name, value in match.groupdict().items() if value is not None)
        found.append((match, _ACT_CODES[int(group[1:])]))
    return found


def _act_mentions(query: str) -> list[tuple[int, str]]:
    """(position, act code) of each act name or abbreviation in ``query``."""
    return [(match.start(), code) for match, code in _act_matches(query)]


# What may stand between a reference and the act written after it: ", ", " (", " of the ",
# " under ". Written so that a space is read one way only (the form "[\s,(]*(?:...)?\s*" read a
# long run of spaces in quadratic time, trying each split between its two space-eaters): the
# same strings, since a space is one of "[\s,(]".
_JOINER = re.compile(r"[\s,(]*(?:(?:of|under|in)(?:\s+the)?\s*)?", re.I)


def _act_for(
    query: str, start: int, end: int, mentions: list[tuple[int, str]], positions: list[int]
) -> str | None:
    """The act a section reference spanning ``start..end`` belongs to.

    An act written right after it wins ("section 420 IPC", "s. 379 of the IPC"); otherwise
    the nearest act written before it ("IPC section 420"), else None. ``positions``: the
    mentions' positions, in order. Only the mentions within the longest joiner after ``end``
    are tried (a joiner's every prefix that fullmatches ends within it), so each reference
    costs a look-up and its own gap, not a pass over every mention.
    """
    reach = _JOINER.match(query, end)
    limit = reach.end() if reach else end
    for i in range(bisect_left(positions, end), bisect_right(positions, limit)):
        if _JOINER.fullmatch(query, end, positions[i]):
            return mentions[i][1]
    before = bisect_left(positions, start)
    return mentions[before - 1][1] if before else None


def parse_section_refs(query: str) -> tuple[SectionRef, ...]:
    """Provisions named in ``query``, in order of appearance, without duplicates.

    Each number takes the act mentioned nearest to it; "Article N" with no act named means the
    act whose provisions are articles (the Constitution). A bare number is only read as a
    section right next to an act name ("302 IPC", "IPC 302") or as the whole query ("420",
    "498A?"), so "3 years" or "2 witnesses" never count.
    """
    found = sorted(_refs_with_positions(query), key=lambda item: item[0])
    return tuple(dict.fromkeys(ref for _, ref in found))


def reference_spans(query: str) -> list[tuple[int, int]]:
    """Character spans of the references ``parse_section_refs`` reads ("section 378 and 379",
    the "302" of "302 IPC"), in order, so that a caller can take them out of the text."""
    return sorted((start, end) for start, end, _, _ in _groups(query))


def named_acts(text: str, *, any_case: bool = False, typed: bool = False) -> tuple[str, ...]:
    """The codes of the acts ``text`` names as acts, in order, without duplicates.

    An act is named by a section reference to it ("s. 138 NIA", "302 IPC"), or by its name or
    code written as a proper name:
    - a code or abbreviation with at least two capitals ("IPC", "CrPC", "Cr.P.C."), unless the
      code alone is also something else (the registry's ``bare_code``: "NIA" is also the
      National Investigation Agency);
    - a name whose every word of four letters or more is capitalised ("the Motor Vehicles
      Act", "Constitution of India"); a one-word name ("Constitution") not where a sentence
      starts, whose first word is capitalised anyway.
    So "the constitution of an assembly", "Constitution of an assembly ..." and "Nia and Ida"
    name no act. ``any_case`` counts every mention (what a cited text names, read leniently).
    ``typed`` also counts what a person types for an act in lower case: its code ("bns",
    "cr. p. c."), unless the code alone is also something else ("nia"), and a name of several
    words ("the motor vehicles act"); a one-word name still only as a proper name ("the
    constitution of an assembly" names no act). How the front door reads a question
    (``asked_acts``) and rule 5b a sentence (docs/VALIDATOR.md, "L3").
    """
    return _named(
        text,
        lambda match, code, at_start: (
            any_case
            or _proper(match, code, at_start=at_start)
            or (typed and _typed(match.group(), code))
        ),
    )


def asked_acts(question: str) -> tuple[str, ...]:
    """The codes of the acts a question asks about, in order, without duplicates.

    Those ``named_acts`` reads, and, since a question is typed rather than typeset, an act's
    code or a name of several words in any case: "under the bns", "the code of criminal
    procedure", "the new criminal law that replaced the IPC" (the registry's phrase for the
    BNS). A one-word name still counts only as a proper name: "What is the constitution of an
    unlawful assembly?" asks about no act. A code that is also something else (``bare_code``
    false: "nia") counts only beside a section number, as in ``named_acts``.
    """
    return named_acts(question, typed=True)


def _named(text: str, counts: Callable[[re.Match[str], str, bool], bool]) -> tuple[str, ...]:
    """The acts named in ``text`` by a section reference, or by an act name or code that
    ``counts`` (the match, its act code, whether it starts the sentence), in order, without
    duplicates."""
    matches = _act_matches(text)
    if not matches and not _ARTICLE_WORD.search(text):
        return ()  # most sentences: no act, and no reference could name one (one scan)
    mentions = [(match.start(), code) for match, code in matches]
    lead = _LEAD.match(text)
    opening = lead.end() if lead else 0
    named = [
        (match.start(), code)
        for match, code in matches
        if counts(match, code, match.start() <= opening)
    ]
    named += [(start, ref.act) for start, ref in _refs_with_positions(text, mentions) if ref.act]
    return tuple(dict.fromkeys(code for _, code in sorted(named)))


_CODE_FORM = re.compile(r"[\s.]")
# What may come before the first word of a sentence (quotes, brackets, list and heading marks): a
# name at or before the end of the text's leading run of these starts the sentence. (Read once
# per text: matching the text before every mention again was quadratic.)
_LEAD = re.compile(r"""[\s"'\u201c\u2018(\[*_>#-]*""")


def _proper(match: re.Match[str], code: str, *, at_start: bool) -> bool:
    """Whether ``match`` (an alias of act ``code``) is written as a proper name of the act;
    ``at_start``: nothing but a sentence's opening marks comes before it."""
    written = match.group()
    if _CODE_FORM.sub("", written).upper() == code:
        return sum(c.isupper() for c in written) >= 2 and _BARE_CODE[code]
    words = written.split()
    if not all(w[0].isupper() for w in words if len(w) >= 4):
        return False
    return len(words) > 1 or not at_start


def _typed(written: str, code: str) -> bool:
    """Whether ``written`` (an alias of act ``code``) names the act as typed in lower case: it
    is the act's code all in lower case ("bns", "cr.p.c."; "Ida" is a name, not the Indian
    Divorce Act), unless the code alone is also something else, or a name of several words in
    any case ("code of criminal procedure")."""
    if _CODE_FORM.sub("", written).upper() == code:
        return _BARE_CODE[code] and written == written.lower()
    return len(written.split()) > 1


# Where "Article N" with no act named could name the article act: the cue _KIND reads.
_ARTICLE_WORD = re.compile(r"\barts?\b|\barticles?\b", re.I)


def _refs_with_positions(
    text: str, mentions: list[tuple[int, str]] | None = None
) -> list[tuple[int, SectionRef]]:
    mentions = _act_mentions(text) if mentions is None else mentions
    positions = [pos for pos, _ in mentions]
    found: list[tuple[int, SectionRef]] = []
    for start, end, numbers, is_article in _groups(text):
        act = _act_for(text, start, end, mentions, positions) or (
            _ARTICLE_ACT if is_article else None
        )
        found.extend((pos, SectionRef(normalise_section(num), act)) for pos, num in numbers)
    return found


def act_name(code: str) -> str:
    """A registered act's name as enacted ("Motor Vehicles Act, 1988"), else the code."""
    return next((act.name for act in ACTS if act.code == code), code)


def act_of_id(semantic_id: str) -> str | None:
    """The registered act whose code starts ``semantic_id`` (``IPC_420_0`` → ``IPC``), or None
    (a SQuAD or SciFact passage's id names no act)."""
    code = semantic_id.split("_", 1)[0]
    return code if code in _REGISTERED_CODES else None

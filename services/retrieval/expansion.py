"""Query analysis and expansion: intent, named provisions, rule-based and feedback expansions."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from services.common.intent import Intent, classify_intent
from services.retrieval.lexical import STOPWORDS, WORD_PATTERN, stem, tokenize

# Words appended to the query per intent: the phrasing statutes use for that kind of answer.
INTENT_EXPANSIONS: Final[Mapping[Intent, tuple[str, ...]]] = {
    Intent.PUNISHMENT: ("punished with imprisonment fine",),
    Intent.DEFINITION: ("means is said to",),
    Intent.PROCEDURE: ("procedure court shall application",),
    Intent.SCOPE: ("extends to applies to",),
    Intent.GENERAL: (),
}

# Phrases in a chunk that signal it answers a query of that intent (a rerank feature).
INTENT_CUES: Final[Mapping[Intent, tuple[str, ...]]] = {
    Intent.PUNISHMENT: (
        "punished with", "punishable with", "imprisonment", "fine", "liable to", "sentence",
    ),
    Intent.DEFINITION: ("means", "is said to", "includes", "denotes", "defined", "deemed to"),
    Intent.PROCEDURE: (
        "shall", "procedure", "application", "may apply", "petition", "court may", "magistrate",
    ),
    Intent.SCOPE: ("extends to", "applies to", "apply to", "shall apply", "whole of india"),
    Intent.GENERAL: (),
}  # fmt: skip

# Act names and abbreviations as people write them → act codes used by the statutes corpus.
# Dotted abbreviations need their dots ("i.e.a."), or "i.e. a" would name the Evidence Act.
ACT_ALIASES: Final[Mapping[str, str]] = {
    r"ipc|i\.p\.c\.?|indian penal code|penal code": "IPC",
    r"crpc|cr\.\s?p\.\s?c\.?|code of criminal procedure|criminal procedure code": "CRPC",
    r"cpc|c\.p\.c\.?|code of civil procedure|civil procedure code": "CPC",
    r"iea|i\.e\.a\.|(?:indian )?evidence act": "IEA",
    r"nia|n\.?\s?i\.? act|negotiable instruments?(?: act)?": "NIA",
    r"hma|hindu marriage act": "HMA",
    r"ida|(?:indian )?divorce act": "IDA",
    r"mva|m\.?\s?v\.? act|motor vehicles? act": "MVA",
    r"coi|constitution(?: of india)?": "COI",
}
_ACT_ALTERNATIVES: Final = "|".join(f"(?P<a{i}>{p})" for i, p in enumerate(ACT_ALIASES))
_ACT = re.compile(rf"\b(?:{_ACT_ALTERNATIVES})(?!\w)", re.I)
_ANY_ACT: Final = "(?:" + "|".join(ACT_ALIASES) + ")"
_ACT_CODES: Final = tuple(ACT_ALIASES.values())

_NUMBER = r"\d+(?:-?[A-Za-z]{1,2})?\b"
# "section 420", "sec. 498A", "s. 302", "ss. 299 and 300", "u/s 379", "Article 21A", "art 14".
_PREFIXED = re.compile(
    rf"(?P<kind>\bsections?|\bsecs?\.?|\bss?\.|\bu/ss?\.?|\barticles?|\barts?\.?)\s*(?P<num>{_NUMBER})"
    rf"(?P<more>(?:\s*(?:,|and|or|&|/)\s*{_NUMBER})*)",
    re.I,
)
# A bare number counts only right next to an act name: "302 IPC", "420 of the IPC", "IPC 420".
_NUMBER_THEN_ACT = re.compile(
    rf"\b(?P<num>{_NUMBER})\s+(?:of\s+(?:the\s+)?)?(?=\b{_ANY_ACT}(?!\w))", re.I
)
_ACT_THEN_NUMBER = re.compile(rf"\b{_ANY_ACT}\s+(?P<num>{_NUMBER})", re.I)
_NUM_IN_LIST = re.compile(_NUMBER)
_WORD = WORD_PATTERN


@dataclass(frozen=True, slots=True)
class SectionRef:
    """A provision named in a query; ``act`` is None when the query does not say which act."""

    section: str
    act: str | None = None


@dataclass(frozen=True, slots=True)
class QueryAnalysis:
    """What retrieval needs to know about a query before searching."""

    query: str
    intent: Intent
    section_refs: tuple[SectionRef, ...]
    terms: tuple[str, ...]


def analyse_query(query: str) -> QueryAnalysis:
    """Intent (shared classifier), named provisions and stemmed content terms of ``query``."""
    return QueryAnalysis(
        query=query,
        intent=classify_intent(query),
        section_refs=parse_section_refs(query),
        terms=tuple(dict.fromkeys(tokenize(query))),
    )


def _canonical_section(raw: str) -> str:
    return raw.replace("-", "").upper()


def _act_mentions(query: str) -> list[tuple[int, str]]:
    mentions: list[tuple[int, str]] = []
    for match in _ACT.finditer(query):
        group = next(name for name, value in match.groupdict().items() if value is not None)
        mentions.append((match.start(), _ACT_CODES[int(group[1:])]))
    return mentions


_JOINER = re.compile(r"[\s,(]*(?:(?:of|under|in)(?:\s+the)?)?\s*", re.I)


def _act_for(query: str, start: int, end: int, mentions: list[tuple[int, str]]) -> str | None:
    """The act a section reference spanning ``start..end`` belongs to.

    An act written right after it wins ("section 420 IPC", "s. 379 of the IPC"); otherwise
    the nearest act written before it ("IPC section 420"), else None.
    """
    for pos, code in mentions:
        if pos >= end and _JOINER.fullmatch(query, end, pos):
            return code
    before = [code for pos, code in mentions if pos < start]
    return before[-1] if before else None


def parse_section_refs(query: str) -> tuple[SectionRef, ...]:
    """Provisions named in ``query``, in order of appearance, without duplicates.

    Each number takes the act mentioned nearest to it; "Article N" with no act named means the
    Constitution. A bare number is only read as a section right next to an act name
    ("302 IPC", "IPC 302"), so "3 years" or "2 witnesses" never count.
    """
    mentions = _act_mentions(query)
    # (start, end, numbers, is_article) per reference group; a list "ss. 299 and 300" is one group.
    groups: list[tuple[int, int, list[tuple[int, str]], bool]] = []
    for match in _PREFIXED.finditer(query):
        numbers = [(match.start("num"), match.group("num"))]
        more_start = match.start("more")
        numbers += [
            (more_start + m.start(), m.group()) for m in _NUM_IN_LIST.finditer(match.group("more"))
        ]
        is_article = match.group("kind").lower().startswith("art")
        groups.append((match.start(), match.end(), numbers, is_article))
    for pattern in (_NUMBER_THEN_ACT, _ACT_THEN_NUMBER):
        for match in pattern.finditer(query):
            start = match.start("num")
            if not any(a <= start < b for a, b, _, _ in groups):
                groups.append((start, match.end("num"), [(start, match.group("num"))], False))
    found: list[tuple[int, SectionRef]] = []
    for start, end, numbers, is_article in groups:
        act = _act_for(query, start, end, mentions) or ("COI" if is_article else None)
        found.extend((pos, SectionRef(_canonical_section(num), act)) for pos, num in numbers)
    found.sort(key=lambda item: item[0])
    return tuple(dict.fromkeys(ref for _, ref in found))


def rule_expansions(analysis: QueryAnalysis) -> list[str]:
    """Expanded queries for the query's intent (the primary query is not included)."""
    return [f"{analysis.query} {words}" for words in INTENT_EXPANSIONS[analysis.intent]]


def feedback_terms(
    query_terms: Iterable[str],
    feedback_texts: Sequence[str],
    idf: Callable[[str], float],
    *,
    n_terms: int = 5,
) -> list[str]:
    """Pseudo-relevance feedback: the ``n_terms`` best new words of the first-pass top texts.

    A term's weight is its frequency across ``feedback_texts`` times its idf (a simplified
    RM3). Terms already in the query and numbers are skipped, and with several feedback texts
    a term must occur in at least two, because one text's rare words add noise, not recall.
    Each term is returned in its most frequent surface form, so the dense encoder reads words.
    """
    if n_terms <= 0 or not feedback_texts:
        return []
    known = set(query_terms)
    tf: Counter[str] = Counter()
    docs_with: Counter[str] = Counter()
    surface: dict[str, Counter[str]] = {}
    for text in feedback_texts:
        words = [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]
        stems = [stem(w) for w in words]
        tf.update(stems)
        docs_with.update(set(stems))
        for word, term in zip(words, stems, strict=True):
            surface.setdefault(term, Counter())[word] += 1
    min_docs = 2 if len(feedback_texts) > 1 else 1
    weighted = [
        (count * idf(term), term)
        for term, count in tf.items()
        if term not in known and not term.isdigit() and docs_with[term] >= min_docs
    ]
    weighted.sort(key=lambda item: (-item[0], item[1]))
    return [
        min(surface[term].items(), key=lambda kv: (-kv[1], kv[0]))[0]
        for weight, term in weighted[:n_terms]
        if weight > 0
    ]


def feedback_query(query: str, terms: Sequence[str]) -> str | None:
    """The query with feedback terms appended, or None when there are none."""
    return f"{query} {' '.join(terms)}" if terms else None

"""Query analysis and expansion: intent, named provisions, rule-based and feedback expansions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from services.common.intent import PROFILES, Intent, classify_intent
from services.common.language.key_terms import extract_key_terms
from services.common.language.references import SectionRef, parse_section_refs
from services.common.language.text import stem, without_format_marks, words
from services.retrieval.lexical import STOPWORDS, tokenize


@dataclass(frozen=True, slots=True)
class QueryAnalysis:
    """What retrieval needs to know about a query before searching."""

    query: str
    intent: Intent
    section_refs: tuple[SectionRef, ...]
    terms: tuple[str, ...]
    # A definition question's key terms ("What is a document?": {"docu"}), which name the
    # section whose title is those words (``key_terms.title_terms``); empty for any other
    # question and for one that names a provision.
    defined_term: frozenset[str] = frozenset()


def analyse_query(query: str) -> QueryAnalysis:
    """Intent (shared classifier), named provisions, stemmed content terms of ``query`` (read
    without its invisible format marks: ``text.without_format_marks``) and, for a definition
    question, the term it asks about (its key terms, as sufficiency reads them)."""
    visible = without_format_marks(query)
    intent = classify_intent(visible)
    section_refs = parse_section_refs(visible)
    defined = (
        frozenset(extract_key_terms(visible).terms)
        if intent is Intent.DEFINITION and not section_refs
        else frozenset()
    )
    return QueryAnalysis(
        query=query,
        intent=intent,
        section_refs=section_refs,
        terms=tuple(dict.fromkeys(tokenize(visible))),
        defined_term=defined,
    )


def rule_expansions(analysis: QueryAnalysis) -> list[str]:
    """Expanded queries for the query's intent (the primary query is not included)."""
    return [f"{analysis.query} {words}" for words in PROFILES[analysis.intent].expansions]


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
        kept = [w for w in words(text) if len(w) > 1 and w not in STOPWORDS]
        stems = [stem(w) for w in kept]
        tf.update(stems)
        docs_with.update(set(stems))
        for word, term in zip(kept, stems, strict=True):
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

"""Claim coverage: content-term overlap, supporting spans and citations a sentence should add."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

from services.common.language import negation
from services.common.language.quantities import (
    Date,
    Quantity,
    extract_dates,
    extract_quantities,
    ordered_pairs,
)
from services.common.language.text import Clause, Token, tokenize
from services.common.memo import text_memo

# Ordinals and month names stay word terms ("first", "march"); as numbers they would collide
# with plain values ("1", "3").
_NON_TERM_UNITS = frozenset({"calendar_month", "ordinal"})
# Content terms on each side of a number that describe what it counts.
_CONTEXT_TERMS = 2
# A supporting span may skip at most this many clauses that add nothing to reach one that does.
_MAX_SPAN_GAP = 3
_NORM = attrgetter("norm")
_TERM = attrgetter("term")
_EMPTY = frozenset({""})


@dataclass(slots=True)
class Analysis:
    """Everything the rules need about one text, computed once.

    Clauses are built on first use: evidence needs them for every supporting span, a claim only
    when its cited evidence holds a negation to align it with.
    """

    tokens: tuple[Token, ...]
    terms: frozenset[str]
    quantities: tuple[Quantity, ...]
    contexts: tuple[frozenset[str], ...]
    negations: tuple[negation.NegationScope, ...]
    number_pairs: frozenset[tuple[str, str]] = frozenset()
    negated: frozenset[int] = frozenset()
    _clauses: tuple[Clause, ...] | None = field(default=None, repr=False, compare=False)
    dates: tuple[Date, ...] = ()
    _implicit: frozenset[str] | None = field(default=None, repr=False, compare=False)
    _numbers: tuple[tuple[Quantity, frozenset[str]], ...] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def clauses(self) -> tuple[Clause, ...]:
        # Idempotent, so two threads racing on a shared (cached) evidence analysis is harmless.
        if self._clauses is None:
            self._clauses = _clauses(self.tokens, self.quantities, self.negated)
        return self._clauses

    @property
    def implicit(self) -> frozenset[str]:
        """The terms words that negate without a cue govern (``negation.implicit_terms``),
        built on first use and kept (a cited passage is analysed once and reused)."""
        if self._implicit is None:
            self._implicit = negation.implicit_terms(self.tokens)
        return self._implicit

    @property
    def numbers(self) -> tuple[tuple[Quantity, frozenset[str]], ...]:
        """Each quantity with its context terms, once per distinct (value, unit, reference,
        context), in text order, the first of each kept; built on first use and kept. What the
        number rule reads of a quantity is those four (``quantities.unsupported``,
        ``displaced_references``), so it judges the same against these as against every
        quantity, and a passage repeating "IPC 1" 3,000 times costs it one comparison, not
        3,000 per claim number."""
        if self._numbers is None:
            seen: set[tuple[float, str, bool, frozenset[str]]] = set()
            kept: list[tuple[Quantity, frozenset[str]]] = []
            for quantity, context in zip(self.quantities, self.contexts, strict=True):
                key = (quantity.value, quantity.unit, quantity.reference, context)
                if key not in seen:
                    seen.add(key)
                    kept.append((quantity, context))
            self._numbers = tuple(kept)
        return self._numbers

    @property
    def norms(self) -> frozenset[str]:
        """Every word of the text, normalised (stop words included)."""
        return frozenset(map(_NORM, self.tokens))


def analyse(text: str, *, evidence: bool = False) -> Analysis:
    """Tokens, content terms (words and normalised numbers), quantities, negations, clauses."""
    tokens = tokenize(text)
    norms = set(map(_NORM, tokens))
    quantities = extract_quantities(text, lenient_months=evidence, words=norms)
    if negation.TRIGGERS.isdisjoint(norms) and "n't" not in text and "n’t" not in text:
        scopes: tuple[negation.NegationScope, ...] = ()
        negated: frozenset[int] = frozenset()
    else:
        scopes, negated = negation.scopes(tokens)
    terms = frozenset(map(_TERM, tokens))
    if quantities:
        terms |= {q.term for q in quantities if q.unit not in _NON_TERM_UNITS}
    return Analysis(
        tokens,
        terms - _EMPTY,
        quantities,
        _contexts(tokens, quantities),
        scopes,
        ordered_pairs(text, quantities),
        negated,
        dates=extract_dates(text, quantities),
    )


@text_memo()
def analyse_evidence(text: str) -> Analysis:
    """``analyse`` for evidence text, memoised: the same chunks recur across requests."""
    return analyse(text, evidence=True)


def coverage(claim_terms: frozenset[str], evidence_terms: frozenset[str]) -> float:
    """Fraction of the claim's content terms found in the evidence (1.0 for an empty claim)."""
    if not claim_terms:
        return 1.0
    return len(claim_terms & evidence_terms) / len(claim_terms)


def support_span(claim_terms: frozenset[str], analysis: Analysis) -> tuple[int, int] | None:
    """Character span of the best-matching clause window of an evidence text, or None.

    Starts from the clause sharing most claim terms, then grows towards the nearest clause (at
    most ``_MAX_SPAN_GAP`` away) that adds claim terms not yet covered, while one does.
    """
    clauses = analysis.clauses
    matched = [c.terms & claim_terms for c in clauses]
    if not any(matched):
        return None
    best = max(range(len(clauses)), key=lambda i: (len(matched[i]), -i))
    lo = hi = best
    covered = set(matched[best])
    while True:
        left = next(
            (i for i in range(lo - 1, max(lo - 1 - _MAX_SPAN_GAP, -1), -1) if matched[i] - covered),
            None,
        )
        right = next(
            (
                i
                for i in range(hi + 1, min(hi + 1 + _MAX_SPAN_GAP, len(clauses)))
                if matched[i] - covered
            ),
            None,
        )
        if left is None and right is None:
            break
        gain_left = len(matched[left] - covered) if left is not None else -1
        gain_right = len(matched[right] - covered) if right is not None else -1
        if gain_right >= gain_left and right is not None:
            covered |= matched[right]
            hi = right
        elif left is not None:
            covered |= matched[left]
            lo = left
    return clauses[lo].start, clauses[hi].end


def missing_citations(
    claim_terms: frozenset[str],
    cited_terms: frozenset[str],
    uncited: Iterable[tuple[str, frozenset[str]]],
    *,
    min_terms: int,
    min_fraction: float,
    min_alone: float,
) -> list[str]:
    """Uncited evidence ids the claim draws on, chosen greedily (largest contribution first).

    An uncited item is reported when, on its own, it covers at least ``min_alone`` of the claim's
    terms (it could have been cited for the sentence), and it holds at least ``max(min_terms,
    ceil(min_fraction * |claim terms|))`` claim terms that neither the cited items nor an already
    reported item hold. Near-duplicates of cited text never count: they add nothing new.
    """
    if not claim_terms:
        return []
    need = max(min_terms, math.ceil(min_fraction * len(claim_terms) - 1e-9))
    covered = set(claim_terms & cited_terms)
    alone = min_alone * len(claim_terms) - 1e-9
    candidates = [
        (semantic_id, shared)
        for semantic_id, terms in uncited
        if len(shared := claim_terms & terms) >= alone
    ]
    picked: list[str] = []
    while True:
        best_id = ""
        best_new: frozenset[str] = frozenset()
        for semantic_id, shared in candidates:
            new = shared - covered
            if len(new) > len(best_new) and semantic_id not in picked:
                best_id, best_new = semantic_id, new
        if len(best_new) < need:
            return picked
        picked.append(best_id)
        covered |= best_new


def _contexts(
    tokens: Sequence[Token], quantities: Sequence[Quantity]
) -> tuple[frozenset[str], ...]:
    """For each quantity, the content terms right around it (two before, two after)."""
    if not quantities:
        return ()
    content = [t for t in tokens if t.term]
    starts = [t.start for t in content]
    contexts: list[frozenset[str]] = []
    for q in quantities:
        before = bisect.bisect_left(starts, q.start)
        after = bisect.bisect_left(starts, q.end)
        window = content[max(before - _CONTEXT_TERMS, 0) : before]
        window += content[after : after + _CONTEXT_TERMS]
        contexts.append(frozenset(t.term for t in window))
    return tuple(contexts)


def _clauses(
    tokens: Sequence[Token], quantities: Sequence[Quantity], negated: frozenset[int]
) -> tuple[Clause, ...]:
    """Clauses with their terms (numbers included) and their negated and positive terms."""
    if not tokens:
        return ()
    groups: list[list[int]] = [[0]]
    for i in range(1, len(tokens)):
        if tokens[i].clause == tokens[groups[-1][0]].clause:
            groups[-1].append(i)
        else:
            groups.append([i])
    clauses: list[Clause] = []
    q = 0
    for n, group in enumerate(groups):
        start, end = tokens[group[0]].start, tokens[group[-1]].end
        words = [(tokens[i].term, i in negated) for i in group if tokens[i].term]
        terms = {term for term, _ in words}
        while q < len(quantities) and quantities[q].start < start:
            q += 1
        k = q
        while k < len(quantities) and quantities[k].start < end:
            if quantities[k].unit not in _NON_TERM_UNITS:
                terms.add(quantities[k].term)
            k += 1
        clauses.append(
            Clause(
                start,
                end,
                frozenset(terms),
                negated=frozenset(term for term, neg in words if neg),
                positive=frozenset(term for term, neg in words if not neg),
                position=(n + 0.5) / len(groups),
            )
        )
    return tuple(clauses)

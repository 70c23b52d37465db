"""How passages from different documents relate: the same statement, or a difference in a number
or a negation (issue 16, part 2), read with the validator's own parsers.

Two passages are about the same point when they share at least ``min_shared_terms`` content
terms and those make up at least ``same_point`` of the smaller passage's terms (the terms, stop
words and stems of ``services.common.language.text``). Of two such passages:

    both state a quantity of one kind (years, rupees, a bare number) and no value is shared
        → NUMERIC    "year: 3 in IPC_379_0, 7 in IPC_380_0"
    a term one negates, the other states outside any negation (``language.negation`` scopes)
        → NEGATION   '"not amounting to murder" in IPC_304_0, stated without a negation in
                     IPC_302_0'
    neither, the same quantities, and ``same_statement`` of the smaller passage's terms shared
        → AGREEMENT  "IPC_379_0 and IPC_384_0 state the same (year: 3)"

A difference is flagged for the reader, not resolved: two statutes giving different terms for
different offences differ on a number without either being wrong. Pure; no service imports.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from services.common.evidence import Chunk
from services.common.language import negation
from services.common.language.quantities import amount, extract_quantities
from services.common.language.text import Token, tokenize

# Kinds whose values are not amounts: "first" is an idiom as often as a rank, and a month name
# is a date part (a passage's dates are not compared).
_NOT_AMOUNTS = frozenset({"ordinal", "calendar_month"})
# Content terms a negation cue governs here: two, not the validator's three (which checks a
# claim against its evidence, where a wide scope only makes it stricter). Between two passages a
# third term reaches past a short negated phrase into the main verb: "culpable homicide not
# amounting to murder shall be punished" would negate "punished" and differ from every penalty.
_SCOPE_TERMS = 2


class RelationKind(enum.Enum):
    """How two passages about the same point relate."""

    AGREEMENT = "AGREEMENT"
    NUMERIC = "NUMERIC"
    NEGATION = "NEGATION"


@dataclass(frozen=True, slots=True)
class SourceRelation:
    """Two passages from different documents and how they relate; ``first_id`` comes first in
    the order the passages were given."""

    first_id: str
    second_id: str
    kind: RelationKind
    description: str


@dataclass(frozen=True, slots=True)
class RelationOptions:
    """When two passages count as being about the same point, and as the same statement."""

    min_shared_terms: int = 3
    same_point: float = 0.5
    same_statement: float = 0.8


@dataclass(frozen=True, slots=True)
class _Reading:
    """A passage as the parsers read it."""

    text: str
    tokens: tuple[Token, ...]
    scopes: tuple[negation.NegationScope, ...]
    terms: frozenset[str]
    negated: frozenset[str]  # terms inside a negation scope
    positive: frozenset[str]  # terms occurring outside any negation scope
    amounts: tuple[tuple[str, frozenset[str]], ...]  # (kind, canonical values), kinds sorted
    # Per kind, each amount as written: (canonical value, unit, term), for the descriptions.
    written: tuple[tuple[str, frozenset[tuple[str, str, str]]], ...] = ()

    def quote_negation(self, terms: frozenset[str]) -> str:
        """The words from the first cue negating one of ``terms`` to the last of them it
        negates: "not amounting to murder"."""
        for scope in self.scopes:
            hit = terms.intersection(scope.terms)
            if not hit:
                continue
            end, reached = scope.end, set()
            for token in self.tokens:
                if token.start <= scope.start:
                    continue
                if token.term in hit:
                    end = token.end
                    reached.add(token.term)
                if reached >= hit:
                    break
            return " ".join(self.text[scope.start : end].split())
        return ", ".join(sorted(terms))


@lru_cache(maxsize=4096)
def _read(text: str) -> _Reading:
    tokens = tokenize(text)
    scopes, negated_at = negation.scopes(tokens, width=_SCOPE_TERMS)
    negated = frozenset(t for scope in scopes for t in scope.terms if not t.startswith("#"))
    positive = frozenset(
        token.term for i, token in enumerate(tokens) if token.term and i not in negated_at
    )
    # Compared as the validator's number rule equates them ("one year" = "12 months").
    amounts: dict[str, set[str]] = {}
    written: dict[str, set[tuple[str, str, str]]] = {}
    for quantity in extract_quantities(text):
        if not quantity.reference and quantity.unit not in _NOT_AMOUNTS:
            kind, value = amount(quantity)
            amounts.setdefault(kind, set()).add(value)
            written.setdefault(kind, set()).add((value, quantity.unit, quantity.term))
    return _Reading(
        text=text,
        tokens=tokens,
        scopes=scopes,
        terms=frozenset(token.term for token in tokens if token.term),
        negated=negated,
        positive=positive,
        amounts=tuple((kind, frozenset(values)) for kind, values in sorted(amounts.items())),
        written=tuple((kind, frozenset(forms)) for kind, forms in sorted(written.items())),
    )


def relate(
    passages: Sequence[Chunk], options: RelationOptions | None = None
) -> tuple[SourceRelation, ...]:
    """Every relation between two of ``passages`` from different documents, pairs in the order
    given (a passage repeated is read once)."""
    opts = options or RelationOptions()
    unique = list({chunk.semantic_id: chunk for chunk in passages}.values())
    found: list[SourceRelation] = []
    for i, first in enumerate(unique):
        for second in unique[i + 1 :]:
            if first.doc_id != second.doc_id:
                found.extend(compare(first, second, opts))
    return tuple(found)


def compare(first: Chunk, second: Chunk, options: RelationOptions) -> list[SourceRelation]:
    """How ``first`` and ``second`` relate: nothing when they are not about the same point."""
    a, b = _read(first.text), _read(second.text)
    shared = a.terms & b.terms
    smaller = min(len(a.terms), len(b.terms))
    if len(shared) < options.min_shared_terms or len(shared) < options.same_point * smaller:
        return []
    ids = (first.semantic_id, second.semantic_id)
    found: list[SourceRelation] = []
    numbers = _numeric(a, b, ids)
    if numbers:
        found.append(SourceRelation(*ids, RelationKind.NUMERIC, numbers))
    negations = _negation(a, b, ids)
    if negations:
        found.append(SourceRelation(*ids, RelationKind.NEGATION, negations))
    if not found and a.amounts == b.amounts and len(shared) >= options.same_statement * smaller:
        described = [_described(kind, (a,), (v,)) for kind, v in a.amounts]
        stated = "; ".join(f"{label}: {shown[0]}" for label, shown in described)
        found.append(
            SourceRelation(
                *ids,
                RelationKind.AGREEMENT,
                f"{ids[0]} and {ids[1]} state the same" + (f" ({stated})" if stated else ""),
            )
        )
    return found


def _numeric(a: _Reading, b: _Reading, ids: tuple[str, str]) -> str:
    """The kinds of quantity both passages state with no value in common, described."""
    theirs = dict(b.amounts)
    parts = []
    for kind, values in a.amounts:
        if kind in theirs and values.isdisjoint(theirs[kind]):
            label, (ours, other) = _described(kind, (a, b), (values, theirs[kind]))
            parts.append(f"{label}: {ours} in {ids[0]}, {other} in {ids[1]}")
    return "; ".join(parts)


def _described(
    kind: str, readings: Sequence[_Reading], values: Sequence[frozenset[str]]
) -> tuple[str, list[str]]:
    """A kind's label and, per reading, its ``values`` as written. One unit throughout reads as
    it always did ("year: 3 ..., 7 ..."); units that differ show each value with its own,
    under what they share ("duration: 1 year ..., 18 month ...")."""
    forms = [
        sorted(
            {form for k, fs in r.written if k == kind for form in fs if form[0] in v},
            key=lambda form: (float(form[0]), form[2]),
        )
        for r, v in zip(readings, values, strict=True)
    ]
    units = {unit for per_reading in forms for _, unit, _ in per_reading}
    if len(units) <= 1:
        label = next(iter(units), "") or "number"
        shown = [", ".join(dict.fromkeys(term for _, _, term in f)) for f in forms]
    else:
        label = {"month": "duration", "day": "duration", "share": "share"}.get(kind, kind)
        shown = [
            ", ".join(dict.fromkeys(f"{term} {unit}".strip() for _, unit, term in f)) for f in forms
        ]
    return label, shown


def _negation(a: _Reading, b: _Reading, ids: tuple[str, str]) -> str:
    """Terms one passage negates and the other states without negation, described."""
    parts = [
        f'"{negating.quote_negation(terms)}" in {neg_id}, stated without a negation in {pos_id}'
        for terms, negating, neg_id, pos_id in (
            ((a.negated - b.negated) & b.positive, a, ids[0], ids[1]),
            ((b.negated - a.negated) & a.positive, b, ids[1], ids[0]),
        )
        if terms
    ]
    return "; ".join(parts)

"""Negation cues and their scopes, and the check that a claim and its evidence agree on them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from services.validator.text import NUMBER_WORDS, Clause, Token, word_list

CUES = frozenset(
    word_list("not no never nothing none neither nor without cannot nobody nowhere noone")
)
# "not only X but also Y" asserts X; "whether or not" asserts nothing either way.
_NOT_NEGATION: tuple[tuple[str, ...], ...] = (("not", "only"), ("nothing", "but"))
_AFTER_OR = frozenset({"whether", "if"})
# Bounds: "not less than seven years" negates only the comparison, so its scope is just the
# comparative word ("at least seven years" agrees with it, "less than seven years" does not).
_BOUNDS: dict[tuple[str, ...], str] = {
    ("less", "than"): "less",
    ("more", "than"): "more",
    ("fewer", "than"): "fewer",
    ("later", "than"): "later",
    ("earlier", "than"): "earlier",
    ("exceeding",): "exceed",
    ("to", "exceed"): "exceed",
}
SCOPE_TERMS = 3


@dataclass(frozen=True, slots=True)
class NegationScope:
    """A negation cue and the terms it governs: up to three content terms after it, in its
    clause (or the next clause when the cue ends one: "shall not, if ..., be punished")."""

    cue: str
    start: int
    end: int
    terms: tuple[str, ...]
    bound: bool = False


def is_cue(tokens: Sequence[Token], i: int) -> bool:
    """True when token ``i`` negates what follows it."""
    norm = tokens[i].norm
    if not (norm in CUES or norm.endswith("n't")):
        return False
    following = tuple(t.norm for t in tokens[i : i + 3])
    if any(following[: len(phrase)] == phrase for phrase in _NOT_NEGATION):
        return False
    nxt = tokens[i + 1].norm if i + 1 < len(tokens) else ""
    if norm == "no" and nxt[:1].isdigit():
        return False  # "No. 45" is a number sign
    return not (
        norm == "not" and i >= 2 and tokens[i - 1].norm == "or" and tokens[i - 2].norm in _AFTER_OR
    )


def scopes(
    tokens: Sequence[Token], width: int = SCOPE_TERMS
) -> tuple[tuple[NegationScope, ...], frozenset[int]]:
    """Every negation cue with the terms it governs, and the indices of the negated tokens.

    Numbers in a scope count as ``#<digits>`` so that "was not 2.77" still has a scope.
    """
    found: list[NegationScope] = []
    negated: set[int] = set()
    for i, token in enumerate(tokens):
        if token.term or not is_cue(tokens, i):
            continue
        bound = _bound(tokens, i)
        if bound:
            negated.add(i + 1)
            found.append(NegationScope(token.norm, token.start, token.end, (bound,), bound=True))
            continue
        terms: list[str] = []
        clause = token.clause
        jumped = False
        for j in range(i + 1, len(tokens)):
            follower = tokens[j]
            if follower.clause != clause:
                if terms or jumped:
                    break
                clause, jumped = follower.clause, True
            if len(terms) >= width:
                break
            number = follower.norm.isdigit() or follower.norm in NUMBER_WORDS
            term = follower.term or ("#" + follower.norm if number else "")
            if term:
                negated.add(j)
                if term not in terms:
                    terms.append(term)
        found.append(NegationScope(token.norm, token.start, token.end, tuple(terms)))
    return tuple(found), frozenset(negated)


def _bound(tokens: Sequence[Token], i: int) -> str:
    if tokens[i].norm not in ("not", "no"):
        return ""
    for phrase, comparative in _BOUNDS.items():
        if tuple(t.norm for t in tokens[i + 1 : i + 1 + len(phrase)]) == phrase:
            return comparative
    return ""


def mismatches(
    claim_scopes: Sequence[NegationScope],
    claim_clauses: Sequence[Clause],
    claim_words: frozenset[str],
    evidence_scopes: Iterable[NegationScope],
    evidence_clauses: Sequence[Clause],
) -> list[str]:
    """Human-readable negation disagreements between a claim and its cited evidence.

    Forward: each claim negation must share a scope term with some evidence negation.
    Reverse: when the evidence negates a term that a claim clause states without negation, the
    claim clause is aligned with the evidence clauses holding that term (most shared terms); it
    fails when the best-aligned one negates the term ("X is not punishable" vs "X is punishable"),
    and passes when a clause stating it positively aligns at least as well. A negated bound
    ("not less than") fails a claim that uses the comparative word without negation.
    """
    evidence_list = list(evidence_scopes)
    problems: list[str] = []
    claim_negated = {term for scope in claim_scopes for term in scope.terms}
    for scope in claim_scopes:
        if scope.terms and not any(set(scope.terms).intersection(e.terms) for e in evidence_list):
            problems.append(
                f"claim says '{scope.cue} {' '.join(scope.terms)}' but the cited evidence "
                "has no matching negation"
            )
    reported: set[str] = set()
    for scope in evidence_list:
        if scope.bound:
            stated = {t for t in scope.terms if t in claim_words} - claim_negated
        else:
            stated = {
                t
                for t in scope.terms
                if t not in claim_negated
                and _aligned_with_negation(t, claim_clauses, evidence_clauses)
            }
        stated -= reported
        if stated:
            reported |= stated
            problems.append(
                f"evidence says '{scope.cue} {' '.join(scope.terms)}' but the claim states "
                f"{', '.join(sorted(stated))} without negation"
            )
    return problems


def _aligned_with_negation(
    term: str, claim_clauses: Sequence[Clause], evidence_clauses: Sequence[Clause]
) -> bool:
    """True when a claim clause stating ``term`` aligns best with a clause negating it.

    Alignment: most shared terms, then the closest relative position in the text.
    """
    for clause in claim_clauses:
        if term not in clause.positive:
            continue

        def fit(e: Clause, clause: Clause = clause) -> tuple[int, float]:
            return len(clause.terms & e.terms), -abs(clause.position - e.position)

        negated = max((fit(e) for e in evidence_clauses if term in e.negated), default=None)
        positive = max((fit(e) for e in evidence_clauses if term in e.positive), default=None)
        if negated is not None and (positive is None or negated > positive):
            return True
    return False

"""Permission and duty: "the Government may commute" is not "the Government must commute".

A sentence that makes a duty of what its cited text only allows contradicts it while keeping
every content word, so neither coverage nor the negation rule can see it. This module reads, on
each side, the content terms governed by a permission ("may", "has power to", "shall be
competent to") and by a duty ("must", "is required to", "has to", "is obliged to", "shall"), and
reports the terms the sentence puts under a duty that the text puts only under a permission.

Penalty wording is left to the penalty check: "may extend to seven years" bounds a term, and
"may be of either description" describes it; numbers never count.
"""

from __future__ import annotations

from collections.abc import Sequence

from services.common.language.stopwords import NUMBER_WORDS
from services.common.language.text import Token, phrase_at, phrase_index, surface

# Terms read after a cue: the verb and what closely follows it ("may ... commute the punishment").
_WIDTH = 2
# Words that may stand between a cue and its verb without ending its reach.
_SKIP = frozenset({"be", "also", "not", "then", "still", "either", "in", "its", "his", "her"})
# Permission: "may", "can" (claims), "has power to", "shall be competent to", "is entitled to".
_PERMISSION_WORDS = frozenset({"may", "can", "could", "might"})
_PERMISSION_PHRASES: tuple[tuple[str, ...], ...] = (
    ("has", "power", "to"),
    ("have", "power", "to"),
    ("competent", "to"),
    ("is", "entitled", "to"),
    ("at", "liberty", "to"),
    ("is", "allowed", "to"),
    ("is", "permitted", "to"),
)
# Duty: "must", "shall" (statutes), "is required to", "has to", "is obliged/bound to".
_DUTY_WORDS = frozenset({"must", "shall"})
_DUTY_PHRASES: tuple[tuple[str, ...], ...] = (
    ("required", "to"),
    ("has", "to"),
    ("have", "to"),
    ("obliged", "to"),
    ("obligated", "to"),
    ("bound", "to"),
    ("compelled", "to"),
    ("duty", "to"),
)
# "shall be competent to": the duty word opens a permission.
_SHALL_PERMITS = frozenset({"competent", "entitled", "allowed", "permitted", "empowered"})


_PERMISSION_BY_FIRST = phrase_index(_PERMISSION_PHRASES)
_DUTY_BY_FIRST = phrase_index(_DUTY_PHRASES)


def _governed(tokens: Sequence[Token], start: int) -> tuple[str, ...]:
    """Up to ``_WIDTH`` content terms from ``start`` on, in the cue's clause, skipping a
    parenthetical between commas ("may, by its sentence, order")."""
    terms: list[str] = []
    clause = tokens[start - 1].clause if start > 0 else 0
    j = start
    if j < len(tokens) and tokens[j].clause != clause:
        # The cue ends its clause: skip the parenthetical to the clause after it.
        inner = tokens[j].clause
        while j < len(tokens) and tokens[j].clause == inner:
            j += 1
        if j < len(tokens):
            clause = tokens[j].clause
    while j < len(tokens) and len(terms) < _WIDTH:
        token = tokens[j]
        if token.clause != clause and terms:
            break
        if token.norm.isdigit() or token.norm in NUMBER_WORDS:
            break
        if token.term:
            terms.append(token.term)
        elif token.norm not in _SKIP and not terms and token.norm not in {"to", "the", "a", "an"}:
            break
        j += 1
    return tuple(terms)


def _read(tokens: Sequence[Token]) -> tuple[set[str], set[str]]:
    """(terms under a permission, terms under a duty) in ``tokens``."""
    norms = [t.norm for t in tokens]
    allowed: set[str] = set()
    owed: set[str] = set()
    for i, norm in enumerate(norms):
        after = norms[i + 1] if i + 1 < len(norms) else ""
        n = phrase_at(norms, i, _PERMISSION_BY_FIRST)
        if n:
            allowed.update(_governed(tokens, i + n))
            continue
        if norm in _PERMISSION_WORDS:
            # Penalty wording: "may extend to", "may be of either description".
            if after == "extend" or (after == "be" and i + 2 < len(norms) and norms[i + 2] == "of"):
                continue
            allowed.update(_governed(tokens, i + 1))
            continue
        n = phrase_at(norms, i, _DUTY_BY_FIRST)
        if n:
            owed.update(_governed(tokens, i + n))
            continue
        if norm in _DUTY_WORDS:
            nxt = norms[i + 2] if after == "be" and i + 2 < len(norms) else after
            if nxt in _SHALL_PERMITS:
                continue  # "shall be competent to": read as a permission by its phrase
            owed.update(_governed(tokens, i + 1))
    return allowed, owed


def duties_for_permissions(
    claim_tokens: Sequence[Token], evidence: Sequence[Sequence[Token]]
) -> list[str]:
    """Terms the claim puts under a duty that the cited text puts only under a permission."""
    claim_allowed, claim_owed = _read(claim_tokens)
    if not claim_owed:
        return []
    cited_allowed: set[str] = set()
    cited_owed: set[str] = set()
    for tokens in evidence:
        allowed, owed = _read(tokens)
        cited_allowed |= allowed
        cited_owed |= owed
    made_duty = (claim_owed & cited_allowed) - cited_owed - claim_allowed
    return [
        f"the claim makes '{word}' a duty where the cited text only allows it"
        for word in surface(claim_tokens, sorted(made_duty))
    ]

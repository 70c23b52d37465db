"""Rule N: a quote that leaves out the exception or condition of the sentence it quotes.

"Culpable homicide is murder [IPC_300_0]" is a run of the words of s.300, "Except in the cases
hereinafter excepted, culpable homicide is murder": every word is the statute's, and the
entailment model reads the main clause as entailed by the sentence that qualifies it. But the
exception is the law as much as the rule, so a quote that drops it states a rule the statute
does not make. Deterministic, like the penalty parser: the claim is found word for word in one
cited sentence, and what that sentence has around it is read for a clause that limits it.
docs/VALIDATOR.md, rule 6b and "N".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from services.validator.entailment import normalise, strip_attribution

# What opens a clause that limits the rest of its sentence.
_QUALIFIER = re.compile(
    r"(?:except|save|subject\s+to|unless|if|provided|only|when|where|in\s+case|"
    r"(?:so|as)\s+long\s+as)\b"
)
# After a quote, "where" and "when" open relative clauses as often as conditions ("the node,
# where conducting cells ...", "programs where clergy discuss ..."): the two tune-half cases
# the rule's first form failed wrongly (docs/VALIDATOR.md, "N"). They count before a quote only
# ("When a criminal act is done by several persons ..., each of such persons is liable ...").
_RELATIVE = re.compile(r"(?:where|when)\b")
# A coordinating conjunction that opens a clause of its own ("...; and, if hurt is caused, the
# offender shall ..."): a condition after it governs what follows it, not what came before.
_CONJUNCTION = re.compile(r"(?:and|but|or)\b")
# Where one clause of a sentence ends and the next begins.
_CLAUSE_END = re.compile(r"[;:]")
# Punctuation and dashes between a quote and the clause it leaves out.
_EDGE = " ,;:—–-()\"'“”‘’"
# Shorter runs ("is murder") are too common to call a quote.
MIN_WORDS = 3
# How much of a left-out clause a problem quotes.
_QUOTED_CHARS = 60


def dropped(
    claim: str,
    cited: Iterable[tuple[str, str]],
    split_sentences: Callable[[str], Sequence[tuple[int, int]]],
) -> list[str]:
    """One problem per cited sentence whose limiting clause the claim, a run of that sentence's
    words, leaves out: "quotes IPC_300_0 without 'except in the cases hereinafter excepted'".
    ``cited``: (semantic id, passage text) pairs."""
    key = normalise(strip_attribution(claim)).strip(_EDGE)
    if len(key.split()) < MIN_WORDS:
        return []
    problems = []
    for semantic_id, text in cited:
        for start, end in split_sentences(text) or [(0, len(text))]:
            left_out = _left_out(key, normalise(text[start:end]))
            if left_out is not None:
                shown = (
                    left_out if len(left_out) <= _QUOTED_CHARS else left_out[:_QUOTED_CHARS] + "…"
                )
                problems.append(f"quotes {semantic_id} without {shown!r}, which limits it")
                break
    return problems


def _left_out(key: str, sentence: str) -> str | None:
    """The limiting clause of ``sentence`` that ``key``, a run of its words, leaves out."""
    at = _word_run(key, sentence)
    if at is None:
        return None
    # Before the quote: the clause it sits in, from the last clause boundary (a condition may
    # open it after a conjunction: "...; and, if hurt is caused, <quote>").
    before = _CLAUSE_END.split(sentence[:at])[-1].strip(_EDGE)
    if (conjunction := _CONJUNCTION.match(before)) is not None:
        before = before[conjunction.end() :].strip(_EDGE)
    if before and _QUALIFIER.match(before):
        return before
    # After it: up to the next clause boundary; a conjunction first means a clause of its own.
    after = _CLAUSE_END.split(sentence[at + len(key) :])[0].strip(_EDGE)
    if after and _QUALIFIER.match(after) and not _RELATIVE.match(after):
        return after
    return None


def _word_run(key: str, sentence: str) -> int | None:
    """Where ``key`` occurs in ``sentence`` as whole words, other than as all of it."""
    if key == sentence.strip(_EDGE):
        return None
    start = sentence.find(key)
    while start >= 0:
        end = start + len(key)
        if (start == 0 or not sentence[start - 1].isalnum()) and (
            end == len(sentence) or not sentence[end].isalnum()
        ):
            return start
        start = sentence.find(key, start + 1)
    return None


__all__ = ["MIN_WORDS", "dropped"]

"""Token windows: how a text longer than a model's input is covered, never truncated.

One definition for every cross-encoder use (the validator's entailment tier, synthesis's
answerability check): a text is covered by overlapping windows of at most ``budget`` tokens of
the model's own tokenizer, and each window is scored.
"""

from __future__ import annotations

from typing import Protocol


class Tokenizes(Protocol):
    """Anything that can say where the tokens of a text are."""

    def token_spans(self, text: str) -> list[tuple[int, int]]: ...


def token_windows(text: str, model: Tokenizes, budget: int, overlap: int) -> list[tuple[int, int]]:
    """Character spans of overlapping windows of at most ``budget`` tokens covering ``text``."""
    spans = model.token_spans(text)
    if len(spans) <= budget:
        return [(0, len(text))]
    out = []
    step = max(1, budget - overlap)
    for first in range(0, len(spans), step):
        last = min(len(spans), first + budget) - 1
        out.append((spans[first][0], spans[last][1]))
        if last == len(spans) - 1:
            break
    return out

"""Count a shipped model's calls: how many pairs each encoder call scored (cache tests)."""

from __future__ import annotations

from typing import Any


def count_encoder_calls(encoder: Any) -> list[int]:
    """Wrap ``encoder.probabilities`` so each call records how many pairs it scored; the
    returned list fills as the model is used."""
    calls: list[int] = []
    scored = encoder.probabilities

    def probabilities(pairs: Any) -> Any:
        calls.append(len(pairs))
        return scored(pairs)

    encoder.probabilities = probabilities
    return calls

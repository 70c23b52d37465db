"""The one refusal sentence of the contract, shared by synthesis and the validator."""

from __future__ import annotations

from typing import Final

# The only text an answer may hold when the evidence does not support one (README, proto docs).
REFUSAL: Final = "I cannot answer based on the provided documents."

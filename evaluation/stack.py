"""Where the harness sends its calls: a deployed stack's addresses, or the in-process stack's."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Endpoints:
    """gRPC addresses; ``retrieval`` and ``validator`` may be empty for a deployed stack, which
    skips the figures that need them (retrieval metrics, threshold ablations)."""

    synthesis: str
    retrieval: str = ""
    validator: str = ""

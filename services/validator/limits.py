"""ValidateAnswer's request limits: one definition, cited by the proto comments.

The edge (``convert.py``) rejects a request beyond them with field violations; the engine
itself accepts any input (the fuzz tests feed it more).
"""

from __future__ import annotations

from typing import Final

from services.common.evidence import MAX_ANSWER_BYTES, MAX_ID_CHARS

__all__ = ["MAX_ANSWER_BYTES", "MAX_EVIDENCE", "MAX_EVIDENCE_TEXT_CHARS", "MAX_ID_CHARS"]

MAX_EVIDENCE: Final = 200
MAX_EVIDENCE_TEXT_CHARS: Final = 20_000

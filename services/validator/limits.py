"""ValidateAnswer's request limits: one definition, cited by the proto comments.

The edge (``convert.py``) rejects a request beyond them with field violations; the engine
itself accepts any input (the fuzz tests feed it more).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from services.common.errors import Violations
from services.common.evidence import MAX_ANSWER_BYTES, MAX_ID_CHARS
from services.common.language.citations import EvidenceLike, uncitable

__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_EVIDENCE",
    "MAX_EVIDENCE_TEXT_CHARS",
    "MAX_ID_CHARS",
    "request_violations",
]

MAX_EVIDENCE: Final = 200
MAX_EVIDENCE_TEXT_CHARS: Final = 20_000


def request_violations(
    answer: str, count: int, evidence: Sequence[EvidenceLike], violations: Violations
) -> None:
    """Add to ``violations`` what breaks a ValidateAnswer request's limits: the answer's size,
    ``count`` passages at most ``MAX_EVIDENCE`` (``evidence``: the first of them, one past the
    limit at most), and each passage's id (not blank, not too long, not repeated, citable) and
    text. The service's edge and the ``validate`` CLI both apply it, so neither reads what the
    other would refuse."""
    answer_bytes = len(answer.encode("utf-8"))
    violations.check(
        answer_bytes <= MAX_ANSWER_BYTES,
        "answer",
        f"must be at most {MAX_ANSWER_BYTES} bytes (got {answer_bytes})",
    )
    violations.check(
        count <= MAX_EVIDENCE,
        "evidence",
        f"must hold at most {MAX_EVIDENCE} passages (got {count})",
    )
    seen: set[str] = set()
    for i, passage in enumerate(evidence):
        sid = passage.semantic_id
        if not sid.strip():
            violations.add(f"evidence[{i}].semantic_id", "must not be empty")
        elif len(sid) > MAX_ID_CHARS:
            violations.add(
                f"evidence[{i}].semantic_id", f"must be at most {MAX_ID_CHARS} characters"
            )
        elif sid in seen:
            violations.add(f"evidence[{i}].semantic_id", f"duplicate id {sid!r}")
        elif problem := uncitable(sid):
            violations.add(f"evidence[{i}].semantic_id", problem)
        seen.add(sid)
        if len(passage.text) > MAX_EVIDENCE_TEXT_CHARS:
            violations.add(
                f"evidence[{i}].text", f"must be at most {MAX_EVIDENCE_TEXT_CHARS} characters"
            )

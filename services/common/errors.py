"""Domain error hierarchy shared by all services; mapped to gRPC status in one place (status.py).

    GroundedError                    reason
    ├── InvalidInputError            INVALID_INPUT          bad request fields (carries field violations)
    ├── NotReadyError                NOT_READY              warm-up not finished
    ├── NotFoundError                NOT_FOUND              the named resource (a document) does not exist
    ├── MessageTooLargeError         MESSAGE_TOO_LARGE      a response would exceed the gRPC message limit
    ├── OverloadedError              OVERLOADED             the server is at its limit of calls at once
    ├── IndexIntegrityError          INDEX_INTEGRITY        index / id map / manifest disagree
    ├── CorpusFormatError            CORPUS_FORMAT          a source file cannot be parsed
    ├── ModelUnavailableError        MODEL_UNAVAILABLE      a shipped model is missing, corrupt or fails
    ├── DependencyError              DEPENDENCY_FAILED      a downstream service failed
    │   ├── DependencyUnavailableError  DEPENDENCY_UNAVAILABLE  unreachable or refused
    │   └── DependencyTimeoutError      DEPENDENCY_TIMEOUT      a dependency passed its own limit
    └── DeadlineExceededError        DEADLINE_EXCEEDED      the caller's own deadline ran out here

Expected outcomes are not errors: insufficient evidence and failed validation are normal responses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One invalid request field, named with its proto path (``top_k``, ``evidence[3].semantic_id``)."""

    field: str
    description: str


# The most characters of a caller's value an error message repeats (``shown``).
MAX_SHOWN_CHARS: Final = 64
# The most characters of InvalidInputError's summary (its message, logged and sent as the
# status message): the violations that fit, then how many more there are.
MAX_SUMMARY_CHARS: Final = 700


def shown(value: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``value`` as an error message quotes a caller's value: its repr, cut after ``limit``
    characters with its length said, so a megabyte sent never comes back in an error or a log
    line (``'abc…' (1,000,000 characters)``)."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}… ({len(value):,} characters)"


def _summary(violations: list[FieldViolation]) -> str:
    """``field: description; …`` for as many violations as fit ``MAX_SUMMARY_CHARS``, then
    how many were left out (the BadRequest detail lists them, within its own bound)."""
    parts: list[str] = []
    used = 0
    for i, v in enumerate(violations):
        part = f"{v.field}: {v.description}"
        if parts and used + len(part) + 2 > MAX_SUMMARY_CHARS:
            parts.append(f"and {len(violations) - i} more")
            break
        parts.append(part[:MAX_SUMMARY_CHARS])
        used += len(part) + 2
    return "; ".join(parts)


class GroundedError(Exception):
    """Base of every error this project raises on purpose."""

    reason = "GROUNDED_ERROR"

    def __init__(self, message: str, *, metadata: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.metadata: dict[str, str] = dict(metadata or {})


class InvalidInputError(GroundedError):
    """The request is malformed; ``violations`` names every offending field."""

    reason = "INVALID_INPUT"

    def __init__(
        self,
        violations: list[FieldViolation],
        message: str | None = None,
        *,
        not_shown: int = 0,
    ) -> None:
        """``not_shown``: violations known to exist but not listed (a dependency's bounded
        status said how many it left out); the status counts them with its own."""
        if not violations:
            raise ValueError("InvalidInputError needs at least one field violation")
        summary = message or _summary(violations)
        if not_shown and not message:
            summary += f" (and {not_shown:,} more not listed)"
        super().__init__(summary)
        self.violations: tuple[FieldViolation, ...] = tuple(violations)
        self.not_shown = not_shown


class NotReadyError(GroundedError):
    """The service is still warming up (index or model not loaded)."""

    reason = "NOT_READY"


class NotFoundError(GroundedError):
    """A named resource does not exist (``GetDocument`` with a doc_id the index lacks).

    ``resource_type`` and ``resource_name`` go into the status's ResourceInfo detail.
    """

    reason = "NOT_FOUND"

    def __init__(self, message: str, *, resource_type: str, resource_name: str) -> None:
        super().__init__(
            message, metadata={"resource_type": resource_type, "resource_name": resource_name}
        )
        self.resource_type = resource_type
        self.resource_name = resource_name


class MessageTooLargeError(GroundedError):
    """A response would be larger than the gRPC message limit (``*_MAX_MESSAGE_BYTES``): a whole
    document of a large source (a long PDF is one document). Said before sending, with the
    sizes, rather than left to gRPC's own "larger than max" on either side."""

    reason = "MESSAGE_TOO_LARGE"


class OverloadedError(GroundedError):
    """The server is already handling as many calls as it may at once (``<SVC>_MAX_CONCURRENT_RPCS``):
    refused before any work, so that a flood queues nowhere. Transient: the caller retries with
    backoff (another replica may have room)."""

    reason = "OVERLOADED"


class IndexIntegrityError(GroundedError):
    """Index artifacts disagree with each other or with the configured model."""

    reason = "INDEX_INTEGRITY"


class CorpusFormatError(GroundedError):
    """A source document file cannot be parsed into documents."""

    reason = "CORPUS_FORMAT"


class ModelUnavailableError(GroundedError):
    """A shipped model is missing, fails its checksum, or cannot run (the service stops serving)."""

    reason = "MODEL_UNAVAILABLE"

    def naming(self, setting: str, value: object) -> ModelUnavailableError:
        """The same error, its message led by the setting that chose the model
        (``VALIDATOR_ENTAILMENT_MODEL_DIR=/models/x: cannot read ...``), so a start-up that
        fails on it says what to change, not only which file was wrong."""
        return ModelUnavailableError(f"{setting}={value}: {self.message}", metadata=self.metadata)


class TooLongForModelError(GroundedError):
    """One request's text is too long for a model to read whole, however its evidence is
    windowed (a question longer than the window). The model is fine: the caller decides without
    it and says so, never taking the service out of rotation."""

    reason = "TOO_LONG_FOR_MODEL"


class DependencyError(GroundedError):
    """A downstream dependency (retrieval, validator, LLM endpoint) failed."""

    reason = "DEPENDENCY_FAILED"

    def __init__(self, dependency: str, message: str) -> None:
        super().__init__(f"{dependency}: {message}", metadata={"dependency": dependency})
        self.dependency = dependency


class DependencyUnavailableError(DependencyError):
    """A downstream dependency could not be reached or refused the call."""

    reason = "DEPENDENCY_UNAVAILABLE"


class DependencyTimeoutError(DependencyError):
    """A downstream dependency did not answer within its time limit. Raised by a client for
    any DEADLINE_EXCEEDED; ``budget.bounded`` makes it ``DeadlineExceededError`` when the time
    the call had was the caller's deadline rather than the stage's limit."""

    reason = "DEPENDENCY_TIMEOUT"


class DeadlineExceededError(GroundedError):
    """The caller's deadline expired before this service could finish."""

    reason = "DEADLINE_EXCEEDED"


class Violations:
    """Collects field violations and raises them together, so a caller sees every problem at once."""

    def __init__(self) -> None:
        self._items: list[FieldViolation] = []

    def add(self, field: str, description: str) -> None:
        self._items.append(FieldViolation(field, description))

    def check(self, ok: bool, field: str, description: str) -> None:
        if not ok:
            self.add(field, description)

    def __bool__(self) -> bool:
        return bool(self._items)

    def raise_if_any(self) -> None:
        if self._items:
            raise InvalidInputError(list(self._items))


def top_k_rule(maximum: int, got: int) -> str:
    """A wire request's ``top_k`` rule, as both services' edges state it (0 is the wire's
    "unset", which each service replaces with its default)."""
    return f"must be between 1 and {maximum}, or 0 for the default (got {got})"

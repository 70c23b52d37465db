"""The one table from domain errors to gRPC status codes, with google.rpc error details."""

from __future__ import annotations

from typing import Final

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from services.common import errors

ERROR_DOMAIN = "grounded.qa"

# A status goes back in HTTP/2 trailers, which the caller's gRPC refuses past its metadata
# limits (8 KiB soft, refused at random above it; 16 KiB hard): the caller then sees
# RESOURCE_EXHAUSTED "received metadata size exceeds ..." instead of the error, and a service
# calling another reports an outage for what was bad input. The message (sent twice: as
# grpc-message, percent-encoded, and in the details) and the field violations are kept to these
# UTF-8 byte sizes, about 6 KiB of trailers at worst.
MAX_STATUS_MESSAGE_BYTES: Final = 768
MAX_VIOLATION_BYTES: Final = 2048

# Exact class → code. Subclasses must be listed themselves: a test fails on any unmapped class.
STATUS_BY_ERROR: dict[type[errors.GroundedError], grpc.StatusCode] = {
    errors.GroundedError: grpc.StatusCode.INTERNAL,
    errors.InvalidInputError: grpc.StatusCode.INVALID_ARGUMENT,
    errors.NotReadyError: grpc.StatusCode.UNAVAILABLE,
    errors.NotFoundError: grpc.StatusCode.NOT_FOUND,
    errors.MessageTooLargeError: grpc.StatusCode.RESOURCE_EXHAUSTED,
    # What gRPC itself answers past a server's maximum_concurrent_rpcs.
    errors.OverloadedError: grpc.StatusCode.RESOURCE_EXHAUSTED,
    errors.IndexIntegrityError: grpc.StatusCode.FAILED_PRECONDITION,
    errors.CorpusFormatError: grpc.StatusCode.FAILED_PRECONDITION,
    errors.ModelUnavailableError: grpc.StatusCode.UNAVAILABLE,
    # Caught where a model is used (the caller decides without it); a safety net otherwise.
    errors.TooLongForModelError: grpc.StatusCode.INVALID_ARGUMENT,
    errors.DependencyError: grpc.StatusCode.UNAVAILABLE,
    errors.DependencyUnavailableError: grpc.StatusCode.UNAVAILABLE,
    errors.DependencyTimeoutError: grpc.StatusCode.DEADLINE_EXCEEDED,
    errors.DeadlineExceededError: grpc.StatusCode.DEADLINE_EXCEEDED,
}

# Refusals caused by the server's state, not the request, carry google.rpc.RetryInfo: how long
# a caller waits before asking the same server again (AIP-194; another replica may be asked at
# once). A server at its concurrency limit frees a place within one call's time; a warming one
# within its warm-up (seconds to minutes: retried with backoff from this delay).
RETRY_DELAY_S: Final[dict[type[errors.GroundedError], float]] = {
    errors.OverloadedError: 0.5,
    errors.NotReadyError: 2.0,
}


def code_for(error: errors.GroundedError) -> grpc.StatusCode:
    """The status code for an error, looked up along its class hierarchy."""
    for cls in type(error).__mro__:
        if cls in STATUS_BY_ERROR:
            return STATUS_BY_ERROR[cls]
    return grpc.StatusCode.INTERNAL


def _pack(message: object) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)  # type: ignore[arg-type]
    return packed


def to_status(error: errors.GroundedError) -> grpc.Status:
    """Build a rich status: ErrorInfo always, BadRequest field violations for bad input,
    ResourceInfo for a resource that does not exist, RetryInfo for a refusal a caller retries
    (``RETRY_DELAY_S``). The message and the violations are bounded
    (``MAX_STATUS_MESSAGE_BYTES``, ``MAX_VIOLATION_BYTES``): violations past the bound are left
    out and counted in ErrorInfo's ``violations_not_shown``."""
    code = code_for(error)
    message = _bounded(error.message, MAX_STATUS_MESSAGE_BYTES)
    metadata = dict(error.metadata)
    extra: list[any_pb2.Any] = []
    if isinstance(error, errors.InvalidInputError):
        shown = _bounded_violations(error.violations)
        left_out = len(error.violations) - len(shown) + error.not_shown
        if left_out:
            metadata["violations_not_shown"] = str(left_out)
        extra.append(_pack(error_details_pb2.BadRequest(field_violations=shown)))
    if isinstance(error, errors.NotFoundError):
        extra.append(
            _pack(
                error_details_pb2.ResourceInfo(
                    resource_type=error.resource_type,
                    resource_name=error.resource_name,
                    description=message,
                )
            )
        )
    delay = next((RETRY_DELAY_S[c] for c in type(error).__mro__ if c in RETRY_DELAY_S), None)
    if delay is not None:
        retry = error_details_pb2.RetryInfo()
        retry.retry_delay.FromNanoseconds(round(delay * 1e9))
        extra.append(_pack(retry))
    info = error_details_pb2.ErrorInfo(reason=error.reason, domain=ERROR_DOMAIN, metadata=metadata)
    status = status_pb2.Status(
        code=getattr(code_pb2, code.name), message=message, details=[_pack(info), *extra]
    )
    rich: grpc.Status = rpc_status.to_status(status)
    return rich


def _bounded(text: str, max_bytes: int) -> str:
    """``text`` whole, or cut to fit ``max_bytes`` of UTF-8 with "…" saying so."""
    raw = text.encode()
    if len(raw) <= max_bytes:
        return text
    return raw[: max_bytes - 3].decode(errors="ignore") + "…"


def _bounded_violations(
    violations: tuple[errors.FieldViolation, ...],
) -> list[error_details_pb2.BadRequest.FieldViolation]:
    """The violations, in order, that fit ``MAX_VIOLATION_BYTES`` (always the first, its
    description cut to fit); the rest are counted in ErrorInfo, not sent."""
    kept: list[error_details_pb2.BadRequest.FieldViolation] = []
    used = 0
    for v in violations:
        item = error_details_pb2.BadRequest.FieldViolation(
            field=_bounded(v.field, MAX_VIOLATION_BYTES // 4),
            description=_bounded(v.description, MAX_VIOLATION_BYTES // 2),
        )
        size = item.ByteSize() + 3  # the repeated field's tag and length
        if kept and used + size > MAX_VIOLATION_BYTES:
            break
        kept.append(item)
        used += size
    return kept


# The ErrorInfo reason of an unexpected exception's status (``internal_status``).
INTERNAL_REASON = "INTERNAL"


def internal_status(message: str = "internal error") -> grpc.Status:
    """A generic INTERNAL status for unexpected exceptions; details stay in the logs."""
    status = status_pb2.Status(
        code=code_pb2.INTERNAL,
        message=message,
        details=[_pack(error_details_pb2.ErrorInfo(reason=INTERNAL_REASON, domain=ERROR_DOMAIN))],
    )
    rich: grpc.Status = rpc_status.to_status(status)
    return rich


def reason_of(error: grpc.aio.AioRpcError) -> str:
    """The ErrorInfo reason of a rich status our servers sent ("" for gRPC's own errors, or a
    peer that sends none): what tells RESOURCE_EXHAUSTED / OVERLOADED (a server at its limit)
    from RESOURCE_EXHAUSTED / MESSAGE_TOO_LARGE (a message too big)."""
    status = rpc_status.from_call(error)
    for detail in status.details if status else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return ""

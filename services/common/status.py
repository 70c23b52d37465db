"""The one table from domain errors to gRPC status codes, with google.rpc error details."""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from services.common import errors

ERROR_DOMAIN = "grounded.qa"

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
    ResourceInfo for a resource that does not exist."""
    code = code_for(error)
    details = [
        _pack(
            error_details_pb2.ErrorInfo(
                reason=error.reason, domain=ERROR_DOMAIN, metadata=error.metadata
            )
        )
    ]
    if isinstance(error, errors.InvalidInputError):
        details.append(
            _pack(
                error_details_pb2.BadRequest(
                    field_violations=[
                        error_details_pb2.BadRequest.FieldViolation(
                            field=v.field, description=v.description
                        )
                        for v in error.violations
                    ]
                )
            )
        )
    if isinstance(error, errors.NotFoundError):
        details.append(
            _pack(
                error_details_pb2.ResourceInfo(
                    resource_type=error.resource_type,
                    resource_name=error.resource_name,
                    description=error.message,
                )
            )
        )
    status = status_pb2.Status(
        code=getattr(code_pb2, code.name), message=error.message, details=details
    )
    rich: grpc.Status = rpc_status.to_status(status)
    return rich


def internal_status(message: str = "internal error") -> grpc.Status:
    """A generic INTERNAL status for unexpected exceptions; details stay in the logs."""
    status = status_pb2.Status(
        code=code_pb2.INTERNAL,
        message=message,
        details=[_pack(error_details_pb2.ErrorInfo(reason="INTERNAL", domain=ERROR_DOMAIN))],
    )
    rich: grpc.Status = rpc_status.to_status(status)
    return rich

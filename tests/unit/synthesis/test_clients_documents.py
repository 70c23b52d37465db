"""How the synthesis client reads retrieval's answer to a document call."""

from __future__ import annotations

import grpc
import pytest
from grpc import aio

from services.common import status
from services.common.errors import (
    DependencyTimeoutError,
    DependencyUnavailableError,
    MessageTooLargeError,
    NotFoundError,
)
from services.synthesis.clients import _dependency_error, _document_error


def rpc_error(code: grpc.StatusCode, details: str = "scripted") -> aio.AioRpcError:
    return aio.AioRpcError(code, aio.Metadata(), aio.Metadata(), details=details)


@pytest.mark.parametrize(
    ("code", "kind", "status_code"),
    [
        (grpc.StatusCode.NOT_FOUND, NotFoundError, grpc.StatusCode.NOT_FOUND),
        # Too large to send, or to receive here: the document's size, said as such.
        (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            MessageTooLargeError,
            grpc.StatusCode.RESOURCE_EXHAUSTED,
        ),
        (grpc.StatusCode.UNAVAILABLE, DependencyUnavailableError, grpc.StatusCode.UNAVAILABLE),
        (grpc.StatusCode.INTERNAL, DependencyUnavailableError, grpc.StatusCode.UNAVAILABLE),
        (
            grpc.StatusCode.DEADLINE_EXCEEDED,
            DependencyTimeoutError,
            grpc.StatusCode.DEADLINE_EXCEEDED,
        ),
    ],
)
def test_retrievals_answer_is_mapped_by_what_it_means(
    code: grpc.StatusCode, kind: type[Exception], status_code: grpc.StatusCode
) -> None:
    error = _document_error(rpc_error(code, "document 'BIG' is 9,000,000 bytes whole"))
    assert type(error) is kind
    assert status.code_for(error) == status_code  # type: ignore[arg-type]
    if kind is MessageTooLargeError:
        assert "9,000,000 bytes" in str(error)


@pytest.mark.parametrize(
    "details",
    [
        "failed to connect to all addresses; last error: UNKNOWN: ipv4:10.1.2.3:50053: "
        "Failed to connect to remote host: connect: Connection refused (111)",
        "connections to all backends failing; last error: UNKNOWN: ipv6:%5B::1%5D:50053: Failed",
    ],
)
def test_a_dependency_error_names_no_peer_address(details: str) -> None:
    """grpc-core's text names the pod it tried (IP and port): the caller gets the cause without
    it; the address stays in this service's log."""
    error = _dependency_error("validator", rpc_error(grpc.StatusCode.UNAVAILABLE, details))
    assert isinstance(error, DependencyUnavailableError)
    assert "<address>" in error.message
    assert "10.1.2.3" not in error.message and "::1" not in error.message
    assert error.message.startswith("validator: UNAVAILABLE: ")
    assert "Failed" in error.message  # the cause is kept

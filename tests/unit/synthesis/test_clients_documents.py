"""How the synthesis client reads retrieval's answer to a document call, and what of a
dependency's failure reaches the caller (no peer address, no configured target)."""

from __future__ import annotations

import logging
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
from grounded.type.v1 import evidence_pb2
from grpc import aio

from services.common import errors, status
from services.common.errors import (
    DependencyTimeoutError,
    DependencyUnavailableError,
    MessageTooLargeError,
    NotFoundError,
)
from services.common.evidence import StageSkip
from services.synthesis.clients import (
    GrpcRetriever,
    GrpcValidator,
    _caller_error,
    _dependency_error,
    _document_error,
)


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


# grpc-core's words when the configured target does not resolve (grpcio 1.7x, c-ares).
UNRESOLVED = (
    "errors resolving validator.grounded-qa.svc.cluster.local:50053: [field:hostname lookup "
    "error:address lookup failed for validator.grounded-qa.svc.cluster.local:50053: Domain "
    "name not found]"
)


@pytest.mark.parametrize(
    "target",
    [
        "dns:///validator.grounded-qa.svc.cluster.local:50053",
        "validator.grounded-qa.svc.cluster.local:50053",
        "dns://10.96.0.10:53/validator.grounded-qa.svc.cluster.local:50053",
        "dns:validator.grounded-qa.svc.cluster.local:50053",
        "dns:///validator.grounded-qa.svc.cluster.local",
        "xds:///validator.grounded-qa.svc.cluster.local:50053",
        "xds://td.example/validator.grounded-qa.svc.cluster.local:50053",
    ],
)
def test_a_dependency_error_names_no_configured_target(target: str) -> None:
    """Found by a security audit: a DNS name (the cluster's namespace and service names)
    reached the caller, since only ipv4:/ipv6:/unix: peers were left out."""
    error = _dependency_error(
        "validator", rpc_error(grpc.StatusCode.UNAVAILABLE, UNRESOLVED), target
    )
    assert isinstance(error, DependencyUnavailableError)
    assert "grounded-qa" not in error.message and "50053" not in error.message
    assert error.message == (
        "validator: UNAVAILABLE: errors resolving <address>: [field:hostname lookup error:"
        "address lookup failed for <address>: Domain name not found]"
    )


def test_a_short_target_is_left_out_as_a_whole_word_only() -> None:
    """A compose service name ("validator") is scrubbed where it is the host, not inside the
    health service's name."""
    details = (
        "DNS resolution failed for validator:50053: C-ares status is not ARES_SUCCESS "
        "qtype=A name=validator is_balancer=0: Domain name not found "
        "(grounded.validator.v1.ValidatorService)"
    )
    error = _dependency_error(
        "validator", rpc_error(grpc.StatusCode.UNAVAILABLE, details), "validator:50053"
    )
    assert error.message == (
        "validator: UNAVAILABLE: DNS resolution failed for <address>: C-ares status is not "
        "ARES_SUCCESS qtype=A name=<address> is_balancer=0: Domain name not found "
        "(grounded.validator.v1.ValidatorService)"
    )


def test_the_target_stays_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="services.synthesis.clients")
    target = "dns:///validator.grounded-qa.svc.cluster.local:50053"

    _dependency_error("validator", rpc_error(grpc.StatusCode.UNAVAILABLE, UNRESOLVED), target)

    assert "validator.grounded-qa.svc.cluster.local:50053" in caplog.text


class _Refusing:
    """A stub whose every call fails as grpc-core fails an unresolvable target."""

    def __init__(self, details: str) -> None:
        self._details = details

    def __getattr__(self, method: str) -> Any:
        async def call(*args: object, **kwargs: object) -> None:
            raise rpc_error(grpc.StatusCode.UNAVAILABLE, self._details)

        return call


async def test_the_clients_leave_their_configured_target_out() -> None:
    """GrpcRetriever and GrpcValidator pass the address they were configured with (server.py
    passes SYNTHESIS_RETRIEVAL_ADDR and SYNTHESIS_VALIDATOR_ADDR) to the error mapping."""
    retrieval_target = "dns:///retrieval.grounded-qa.svc.cluster.local:50051"
    validator_target = "dns:///validator.grounded-qa.svc.cluster.local:50053"
    async with aio.insecure_channel("127.0.0.1:9") as channel:
        retriever = GrpcRetriever(channel, target=retrieval_target)
        validator = GrpcValidator(channel, target=validator_target)
        retriever._stub = _Refusing(UNRESOLVED.replace("validator", "retrieval"))  # type: ignore[assignment]
        validator._stub = _Refusing(UNRESOLVED)  # type: ignore[assignment]
        failures: list[DependencyUnavailableError] = []
        calls = [
            lambda: retriever.retrieve("theft", top_k=3, acts=(), doc_ids=(), timeout_s=1.0),
            lambda: retriever.get_document("IPC_378", timeout_s=1.0),
            lambda: validator.validate("An answer.", [], timeout_s=1.0),
        ]
        for call in calls:
            with pytest.raises(DependencyUnavailableError) as caught:
                await call()
            failures.append(caught.value)

    for failure in failures:
        assert "grounded-qa" not in failure.message and "<address>" in failure.message
        assert "Domain name not found" in failure.message


def test_an_overloaded_retrieval_is_retrieval_failing_not_a_large_document() -> None:
    """Retrieval at its concurrency limit answers RESOURCE_EXHAUSTED too (reason OVERLOADED):
    the caller gets UNAVAILABLE (retry), not 'message too large' about its document."""
    rich = status.to_status(errors.OverloadedError("the retrieval server is already handling"))
    error = _document_error(
        aio.AioRpcError(
            rich.code, aio.Metadata(), aio.Metadata(*rich.trailing_metadata), details=rich.details
        )
    )
    assert type(error) is DependencyUnavailableError
    assert status.code_for(error) == grpc.StatusCode.UNAVAILABLE


def test_violations_retrieval_left_out_are_still_counted() -> None:
    """Retrieval's status lists what fits and counts the rest (violations_not_shown); synthesis
    passing its violations on kept the list and dropped the count, so a caller with 200 bad
    filter values was told of 14 (a review found it)."""
    bad = [errors.FieldViolation(f"filters.acts[{i}]", "x" * 200) for i in range(200)]
    sent = status.to_status(errors.InvalidInputError(bad))
    relayed = _caller_error(
        aio.AioRpcError(
            sent.code, aio.Metadata(), aio.Metadata(*sent.trailing_metadata), details=sent.details
        )
    )
    assert isinstance(relayed, errors.InvalidInputError)
    again = status.to_status(relayed)
    decoded = status_pb2.Status.FromString(dict(again.trailing_metadata)["grpc-status-details-bin"])
    shown = not_shown = 0
    for detail in decoded.details:
        request, meta = error_details_pb2.BadRequest(), error_details_pb2.ErrorInfo()
        if detail.Unpack(request):
            shown = len(request.field_violations)
        elif detail.Unpack(meta):
            not_shown = int(meta.metadata.get("violations_not_shown", "0"))
    assert shown + not_shown == 200 and not_shown > 0


class _Answering:
    """A stub whose RetrievePassages answers ``response``."""

    def __init__(self, response: rpb.RetrievePassagesResponse) -> None:
        self._response = response

    async def RetrievePassages(self, *args: object, **kwargs: object) -> Any:
        return self._response


async def test_the_retriever_keeps_the_stages_retrieval_skipped_and_why() -> None:
    """A stage retrieval skipped (ran false, a skip reason) is kept with its reason; one switched
    off (ran false, no reason) is left out, as before; those that ran give their times."""
    response = rpb.RetrievePassagesResponse(
        timings=[
            evidence_pb2.StageTiming(stage="dense", ran=True, duration_ms=2.0),
            evidence_pb2.StageTiming(stage="expansion", ran=False),
            evidence_pb2.StageTiming(
                stage="rerank", ran=False, skip_reason=evidence_pb2.STAGE_SKIP_REASON_DEADLINE
            ),
        ]
    )
    async with aio.insecure_channel("127.0.0.1:9") as channel:
        retriever = GrpcRetriever(channel)
        retriever._stub = _Answering(response)  # type: ignore[assignment]
        found = await retriever.retrieve("theft", top_k=3, acts=(), doc_ids=(), timeout_s=1.0)

    assert found.timings_ms == {"dense": 2.0}
    assert found.skipped == {"rerank": StageSkip.DEADLINE}


class _Listing(GrpcRetriever):
    """ListDocuments scripted page by page: a response, or an error to raise."""

    def __init__(self, *pages: rpb.ListDocumentsResponse | Exception) -> None:
        self.pages = list(pages)
        self.requests: list[rpb.ListDocumentsRequest] = []

    async def list_documents(
        self, request: rpb.ListDocumentsRequest, *, timeout_s: float
    ) -> rpb.ListDocumentsResponse:
        self.requests.append(request)
        page = self.pages.pop(0)
        if isinstance(page, Exception):
            raise page
        return page


def _page(token: str, *sections: str) -> rpb.ListDocumentsResponse:
    source = evidence_pb2.SourceMetadata(act="IPC", act_name="Indian Penal Code, 1860")
    return rpb.ListDocumentsResponse(
        documents=[
            evidence_pb2.Document(doc_id=f"IPC_{s}", section=s, source=source) for s in sections
        ],
        next_page_token=token,
        index_version="v1",
    )


_REFUSED_TOKEN = errors.InvalidInputError([errors.FieldViolation("page_token", "another index")])


class TestHoldings:
    """What the index holds, read for the front door's check of a question's acts and
    provisions (docs/EVALUATION.md, "Then K")."""

    async def test_holdings_read_every_page(self) -> None:
        listing = _Listing(_page("next", "378", "379"), _page("", "420"))

        held = await listing.holdings(timeout_s=5.0)

        assert held.index_version == "v1"
        assert list(held.acts) == ["IPC"]
        assert held.provisions == {("IPC", "378"), ("IPC", "379"), ("IPC", "420")}
        assert [r.page_token for r in listing.requests] == ["", "next"]
        assert {r.page_size for r in listing.requests} == {500}

    async def test_a_token_another_index_refuses_starts_the_listing_again_once(self) -> None:
        listing = _Listing(_page("next", "378"), _REFUSED_TOKEN, _page("", "378", "420"))

        held = await listing.holdings(timeout_s=5.0)

        assert held.provisions == {("IPC", "378"), ("IPC", "420")}

        twice = _Listing(_page("a", "378"), _REFUSED_TOKEN, _page("b", "378"), _REFUSED_TOKEN)
        with pytest.raises(DependencyUnavailableError, match="could not list its documents"):
            await twice.holdings(timeout_s=5.0)

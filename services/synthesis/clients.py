"""gRPC adapters for the pipeline's EvidenceRetriever and AnswerValidator protocols."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
from grounded.retrieval.v1 import retrieval_service_pb2_grpc as rpb_grpc
from grounded.type.v1 import evidence_pb2
from grounded.type.v1 import validation_pb2 as tpb
from grounded.validator.v1 import validator_service_pb2 as vpb
from grounded.validator.v1 import validator_service_pb2_grpc as vpb_grpc
from grpc import aio
from grpc_status import rpc_status

from services.common.channels import call_idempotent, outbound_metadata
from services.common.documents import MAX_PAGE_SIZE
from services.common.errors import (
    DependencyTimeoutError,
    DependencyUnavailableError,
    FieldViolation,
    InvalidInputError,
    MessageTooLargeError,
    NotFoundError,
)
from services.common.evidence import Chunk
from services.common.passages import (
    INTENT_FROM_PROTO,
    SKIP_FROM_PROTO,
    chunk_to_proto,
    scored_from_proto,
)
from services.common.status import reason_of
from services.common.urls import ADDRESS, whole_names, without_addresses
from services.common.validation import ValidationReport
from services.common.validation_proto import report_from_proto
from services.synthesis.holdings import HeldDocument, Holdings
from services.synthesis.pipeline import RetrievedEvidence

logger = logging.getLogger(__name__)

# The dependencies' service names (their health status names too, ChannelPolicy) and the
# idempotent calls the channels retry on UNAVAILABLE (server.py, ChannelPolicy).
RETRIEVAL_SERVICE = rpb.DESCRIPTOR.services_by_name["RetrievalService"].full_name
VALIDATOR_SERVICE = vpb.DESCRIPTOR.services_by_name["ValidatorService"].full_name
RETRIEVE_METHOD = RETRIEVAL_SERVICE + "/RetrievePassages"
GET_DOCUMENT_METHOD = RETRIEVAL_SERVICE + "/GetDocument"
LIST_DOCUMENTS_METHOD = RETRIEVAL_SERVICE + "/ListDocuments"
VALIDATE_METHOD = VALIDATOR_SERVICE + "/ValidateAnswer"

# Codes that mean "the dependency failed", as opposed to a bug in our request (INVALID_ARGUMENT
# from retrieval, e.g. an unknown act filter, is the caller's problem and is passed on as such).
_TIMEOUT_CODES = {grpc.StatusCode.DEADLINE_EXCEEDED}


# The resolver's prefixes of a configured target: dns:///host:port, dns://server/host:port,
# dns:host:port (grpc-core names the target without them: "errors resolving host:port: ..."),
# and xds's alike (xds:///host:port, xds://authority/name: its errors name the resource).
_DNS_PREFIX = re.compile(r"^(?:dns|xds):(?://[^/]*/)?", re.IGNORECASE)
_PORT = re.compile(r":\d*$")


def _target_names(target: str) -> re.Pattern[str] | None:
    """How grpc-core may write the configured ``target`` in its error text: as configured,
    without its dns: prefix, or its host alone (with any port), each a whole word."""
    if not target:
        return None
    rest = _DNS_PREFIX.sub("", target)
    host = rest if rest.endswith("]") else _PORT.sub("", rest)
    return whole_names((target, rest, host, host.strip("[]")))


def _scrubbed(details: str, target: str) -> str:
    """``details`` without peer addresses or the dependency's configured target, each written
    ``<address>``; the cause words stay."""
    said = without_addresses(details)
    names = _target_names(target)
    return said if names is None else names.sub(ADDRESS, said)


def _dependency_error(name: str, err: aio.AioRpcError, target: str = "") -> Exception:
    """``err`` as the dependency ``name`` failing; ``target``, its configured address
    (SYNTHESIS_RETRIEVAL_ADDR, SYNTHESIS_VALIDATOR_ADDR), is not repeated to the caller."""
    if err.code() in _TIMEOUT_CODES:
        # Whose time it was (the stage's limit or the caller's deadline) is budget.bounded's to
        # say: it knows which of the two the call was given.
        return DependencyTimeoutError(name, "did not answer in time")
    details = err.details() or ""
    said = _scrubbed(details, target)
    if said != details:  # the address stays in this service's log, for its operator
        logger.info("%s call failed: %s: %s", name, err.code().name, details)
    return DependencyUnavailableError(name, f"{err.code().name}: {said}".strip())


class GrpcRetriever:
    """Calls RetrievalService/RetrievePassages.

    ``connect_wait_s``: how long a call may first wait for a channel that is reconnecting (a
    restarted retrieval pod), at most half its time budget (``call_idempotent``). ``target``:
    the channel's configured address, left out of the errors callers see.
    """

    def __init__(
        self, channel: aio.Channel, *, connect_wait_s: float = 0.0, target: str = ""
    ) -> None:
        self._channel = channel
        self._connect_wait_s = connect_wait_s
        self._target = target
        self._stub = rpb_grpc.RetrievalServiceStub(channel)

    async def retrieve(
        self,
        query: str,
        *,
        top_k: int,
        acts: Sequence[str],
        doc_ids: Sequence[str],
        timeout_s: float,
    ) -> RetrievedEvidence:
        request = rpb.RetrievePassagesRequest(
            query=query,
            top_k=top_k,
            filters=evidence_pb2.EvidenceFilters(acts=list(acts), doc_ids=list(doc_ids)),
        )
        metadata = outbound_metadata()
        try:
            response = await call_idempotent(
                lambda left: self._stub.RetrievePassages(request, timeout=left, metadata=metadata),
                timeout_s,
                channel=self._channel,
                connect_wait_s=self._connect_wait_s,
            )
        except aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise _caller_error(err, self._target) from None
            raise _dependency_error("retrieval", err, self._target) from None
        return RetrievedEvidence(
            chunks=[scored_from_proto(p) for p in response.passages],
            intent=INTENT_FROM_PROTO.get(response.intent),
            cache_hit=response.cache_hit,
            index_version=response.index_version,
            unknown_terms=tuple(response.unknown_terms),
            timings_ms={t.stage: t.duration_ms for t in response.timings if t.ran},
            skipped={
                t.stage: SKIP_FROM_PROTO[t.skip_reason]
                for t in response.timings
                if t.skip_reason in SKIP_FROM_PROTO
            },
        )

    async def get_document(self, doc_id: str, *, timeout_s: float) -> rpb.GetDocumentResponse:
        """RetrievalService/GetDocument: NOT_FOUND stays NOT_FOUND (with retrieval's hint),
        field violations are the caller's, anything else is retrieval failing."""
        request = rpb.GetDocumentRequest(doc_id=doc_id)
        response: rpb.GetDocumentResponse = await self._document_call(
            self._stub.GetDocument, request, timeout_s
        )
        return response

    async def list_documents(
        self, request: rpb.ListDocumentsRequest, *, timeout_s: float
    ) -> rpb.ListDocumentsResponse:
        """RetrievalService/ListDocuments; its errors mapped as GetDocument's."""
        response: rpb.ListDocumentsResponse = await self._document_call(
            self._stub.ListDocuments, request, timeout_s
        )
        return response

    async def holdings(self, *, timeout_s: float) -> Holdings:
        """What the index holds (the pipeline's IndexCatalogue): every document ListDocuments
        lists, a page of the largest size at a time, within ``timeout_s`` in all. A page token
        is bound to the index that made it: one another replica refuses (a rollout, mid-way)
        starts the listing again, once; a second refusal is retrieval failing."""
        deadline = time.monotonic() + timeout_s
        try:
            return await self._list_all(deadline)
        except InvalidInputError:
            pass  # a page token another index refused: list again from the start
        try:
            return await self._list_all(deadline)
        except InvalidInputError as exc:
            raise DependencyUnavailableError(
                "retrieval", f"could not list its documents: {exc.message}"
            ) from None

    async def _list_all(self, deadline: float) -> Holdings:
        documents: list[HeldDocument] = []
        version, token = "", ""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DependencyTimeoutError("retrieval", "did not list its documents in time")
            request = rpb.ListDocumentsRequest(page_size=MAX_PAGE_SIZE, page_token=token)
            page = await self.list_documents(request, timeout_s=left)
            version = version or page.index_version
            documents += (
                HeldDocument(d.source.act, d.source.act_name, d.section) for d in page.documents
            )
            token = page.next_page_token
            if not token:
                return Holdings.of(version, documents)

    async def _document_call(self, method: Any, request: Any, timeout_s: float) -> Any:
        """One idempotent call of a document RPC, its errors mapped by ``_document_error``."""
        metadata = outbound_metadata()
        try:
            return await call_idempotent(
                lambda left: method(request, timeout=left, metadata=metadata),
                timeout_s,
                channel=self._channel,
                connect_wait_s=self._connect_wait_s,
            )
        except aio.AioRpcError as err:
            raise _document_error(err, self._target) from None


class GrpcValidator:
    """Calls ValidatorService/ValidateAnswer (``connect_wait_s`` and ``target`` as for
    GrpcRetriever)."""

    def __init__(
        self, channel: aio.Channel, *, connect_wait_s: float = 0.0, target: str = ""
    ) -> None:
        self._channel = channel
        self._connect_wait_s = connect_wait_s
        self._target = target
        self._stub = vpb_grpc.ValidatorServiceStub(channel)

    async def validate(
        self, answer: str, evidence: Sequence[Chunk], *, timeout_s: float
    ) -> ValidationReport:
        request = vpb.ValidateAnswerRequest(
            answer=answer, evidence=[chunk_to_proto(c) for c in evidence]
        )
        metadata = outbound_metadata()
        try:
            response = await call_idempotent(
                lambda left: self._stub.ValidateAnswer(request, timeout=left, metadata=metadata),
                timeout_s,
                channel=self._channel,
                connect_wait_s=self._connect_wait_s,
            )
        except aio.AioRpcError as err:
            # Any failure here, INVALID_ARGUMENT included, means no verdict: fail closed.
            raise _dependency_error("validator", err, self._target) from None
        # The response has ValidationReport's fields, so its bytes read as one.
        return report_from_proto(tpb.ValidationReport.FromString(response.SerializeToString()))


def _caller_error(err: aio.AioRpcError, target: str = "") -> Exception:
    """Retrieval's field violations (e.g. an unknown act filter) are the caller's bad input."""
    violations: list[FieldViolation] = []
    not_shown = 0
    status = rpc_status.from_call(err)
    for detail in status.details if status else ():
        bad = error_details_pb2.BadRequest()
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(bad):
            violations.extend(FieldViolation(v.field, v.description) for v in bad.field_violations)
        elif detail.Unpack(info) and info.metadata.get("violations_not_shown", "").isdigit():
            # Retrieval's status is bounded: what it left out is counted, and passed on.
            not_shown = int(info.metadata["violations_not_shown"])
    if not violations:
        said = _scrubbed(err.details() or "", target)
        return DependencyUnavailableError("retrieval", f"rejected the request: {said}")
    return InvalidInputError(violations, not_shown=not_shown)


def _document_error(err: aio.AioRpcError, target: str = "") -> Exception:
    """Retrieval's answer to a document call as ours: NOT_FOUND and field violations are the
    caller's and pass on; anything else is retrieval failing (``target`` as for
    ``_dependency_error``)."""
    if err.code() == grpc.StatusCode.INVALID_ARGUMENT:
        return _caller_error(err, target)
    if err.code() == grpc.StatusCode.NOT_FOUND:
        return _not_found(err)
    if err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and reason_of(err) != "OVERLOADED":
        # Retrieval at its concurrency limit answers RESOURCE_EXHAUSTED / OVERLOADED: retrieval
        # failing (below), not the document.
        # Retrieval's own refusal of a document too large to send, or this channel's receive
        # limit (SYNTHESIS_MAX_MESSAGE_BYTES) refusing one retrieval sent: the document's size,
        # not retrieval failing.
        said = _scrubbed(err.details() or "", target)
        return MessageTooLargeError(f"retrieval: {said or 'message too large'}")
    return _dependency_error("retrieval", err, target)


def _not_found(err: aio.AioRpcError) -> NotFoundError:
    """Retrieval's NOT_FOUND as ours: its message and ResourceInfo, passed on unchanged."""
    status = rpc_status.from_call(err)
    for detail in status.details if status else ():
        info = error_details_pb2.ResourceInfo()
        if detail.Unpack(info):
            return NotFoundError(
                err.details() or info.description,
                resource_type=info.resource_type,
                resource_name=info.resource_name,
            )
    return NotFoundError(err.details() or "not found", resource_type="", resource_name="")

"""Tiny real gRPC servers standing in for retrieval and the validator, slow or failing on purpose.

They use the generated servicer base classes, so the synthesis service talks to them over real
loopback channels exactly as it talks to the real services.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
from grounded.retrieval.v1 import retrieval_service_pb2_grpc as rpb_grpc
from grounded.type.v1 import validation_pb2
from grounded.validator.v1 import validator_service_pb2 as vpb
from grounded.validator.v1 import validator_service_pb2_grpc as vpb_grpc
from grpc import aio

from services.common.evidence import ScoredChunk
from services.common.passages import document_to_proto, scored_to_proto
from services.retrieval.chunking import chunk_document
from services.retrieval.corpus import load_statutes

ROOT = Path(__file__).resolve().parents[2]
IPC = ROOT / "data" / "corpora" / "indian_law" / "ipc.json"
QUESTION = "What is the punishment for cheating under section 420?"


def section_passages(section: str = "420") -> list[ScoredChunk]:
    """The real chunks of one IPC section, as retrieval would return them for ``QUESTION``."""
    doc = next(d for d in load_statutes(IPC) if d.section == section)
    return [ScoredChunk(c, 1.0 - 0.01 * i) for i, c in enumerate(chunk_document(doc))]


@dataclass
class CallLog:
    """What a fake saw: the deadline each call arrived with, and how each call ended."""

    time_remaining: list[float | None] = field(default_factory=list)
    cancelled: list[float] = field(default_factory=list)  # monotonic time of each cancellation
    finished: list[float] = field(default_factory=list)  # monotonic time of each completed call

    async def serve(self, context: aio.ServicerContext[Any, Any], delay_s: float) -> None:
        """Record the call's deadline, wait ``delay_s``, and record whether it finished or was cut."""
        self.time_remaining.append(context.time_remaining())
        try:
            await asyncio.sleep(delay_s)
        except asyncio.CancelledError:
            self.cancelled.append(time.monotonic())
            raise
        self.finished.append(time.monotonic())


class FakeRetrieval(rpb_grpc.RetrievalServiceServicer):
    """Returns fixed passages after ``delay_s``; records deadlines and cancellations."""

    def __init__(self, passages: list[ScoredChunk], delay_s: float = 0.0) -> None:
        self.passages = passages
        self.delay_s = delay_s
        self.log = CallLog()

    async def RetrievePassages(
        self, request: rpb.RetrievePassagesRequest, context: aio.ServicerContext[Any, Any]
    ) -> rpb.RetrievePassagesResponse:
        await self.log.serve(context, self.delay_s)
        return rpb.RetrievePassagesResponse(
            passages=[scored_to_proto(s) for s in self.passages[: request.top_k or 5]]
        )

    async def GetDocument(
        self, request: rpb.GetDocumentRequest, context: aio.ServicerContext[Any, Any]
    ) -> rpb.GetDocumentResponse:
        await self.log.serve(context, self.delay_s)
        chunks = [s.chunk for s in self.passages if s.chunk.doc_id == request.doc_id]
        if not chunks:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no document {request.doc_id!r}")
        return rpb.GetDocumentResponse(document=document_to_proto(chunks), index_version="fake")


class FakeValidator(vpb_grpc.ValidatorServiceServicer):
    """Answers after ``delay_s`` with ``response`` (a GROUNDED verdict by default: a late "yes"),
    or fails with ``code``."""

    def __init__(
        self,
        *,
        delay_s: float = 0.0,
        response: vpb.ValidateAnswerResponse | None = None,
        code: grpc.StatusCode | None = None,
    ) -> None:
        self.delay_s = delay_s
        self.response = response or vpb.ValidateAnswerResponse(
            verdict=validation_pb2.VALIDATION_VERDICT_GROUNDED, support_score=1.0
        )
        self.code = code
        self.log = CallLog()

    async def ValidateAnswer(
        self, request: vpb.ValidateAnswerRequest, context: aio.ServicerContext[Any, Any]
    ) -> vpb.ValidateAnswerResponse:
        await self.log.serve(context, self.delay_s)
        if self.code is not None:
            await context.abort(self.code, "injected failure")
        return self.response


async def serve_fake(
    servicer: object, credentials: grpc.ServerCredentials | None = None
) -> tuple[aio.Server, str]:
    """Start ``servicer`` on a free loopback port (TLS with ``credentials``); returns the server
    and its address (``localhost`` under TLS, the name the test certificate carries)."""
    server = aio.server()
    if isinstance(servicer, rpb_grpc.RetrievalServiceServicer):
        rpb_grpc.add_RetrievalServiceServicer_to_server(servicer, server)
    else:
        vpb_grpc.add_ValidatorServiceServicer_to_server(servicer, server)
    if credentials is None:
        port = server.add_insecure_port("127.0.0.1:0")
        host = "127.0.0.1"
    else:
        port = server.add_secure_port("127.0.0.1:0", credentials)
        host = "localhost"
    await server.start()
    return server, f"{host}:{port}"

"""Fail closed over real gRPC: with the validator or retrieval down, hung or erroring, no answer
leaves the synthesis service; and the gRPC clients map each failure to the documented error."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grounded.type.v1 import validation_pb2
from grounded.validator.v1 import validator_service_pb2 as vpb
from grounded.validator.v1 import validator_service_pb2_grpc as vpb_grpc
from grpc import aio
from grpc_status import rpc_status

from services.common.channels import open_channel
from services.common.errors import (
    DependencyTimeoutError,
    DependencyUnavailableError,
    InvalidInputError,
)
from services.common.evidence import Chunk
from services.common.server import ServiceApp
from services.common.validation import Verdict
from services.synthesis import server as synthesis_server
from services.synthesis.clients import GrpcRetriever, GrpcValidator
from services.synthesis.config import SynthesisConfig
from tests.integration.conftest import Stack
from tests.support.grpc_helpers import error_reason, field_violations

pytestmark = pytest.mark.integration

# Answerable from the IPC: sufficiency passes and the extractive generator drafts an answer, so
# each request reaches the validator.
QUESTION = "What is the punishment for cheating under section 420?"


def closed_port() -> str:
    """A loopback address nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"127.0.0.1:{port}"


@dataclass
class FakeValidator(vpb_grpc.ValidatorServiceServicer):
    """A validator that accepts every draft (a liar), after ``delay_s``, or fails with ``code``."""

    delay_s: float = 0.0
    code: grpc.StatusCode | None = None
    answers: list[str] = field(default_factory=list)

    async def ValidateAnswer(
        self, request: vpb.ValidateAnswerRequest, context: aio.ServicerContext[Any, Any]
    ) -> vpb.ValidateAnswerResponse:
        self.answers.append(request.answer)
        await asyncio.sleep(self.delay_s)
        if self.code is not None:
            await context.abort(self.code, "scripted failure")
        return vpb.ValidateAnswerResponse(
            verdict=validation_pb2.VALIDATION_VERDICT_GROUNDED,
            cited_ids=[p.semantic_id for p in request.evidence[:1]],
        )


@pytest.fixture
async def fake_validator() -> AsyncIterator[tuple[FakeValidator, str]]:
    servicer = FakeValidator()
    server = aio.server()
    vpb_grpc.add_ValidatorServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield servicer, f"127.0.0.1:{port}"
    await server.stop(0)


@pytest.fixture
async def synthesis_with() -> AsyncIterator[Any]:
    """Start a synthesis server on given dependency addresses; stopped after the test."""
    apps: list[ServiceApp] = []

    async def start(retrieval: str, validator: str, **env: str) -> str:
        config = SynthesisConfig.from_env(
            {
                "SYNTHESIS_PORT": "0",
                "SYNTHESIS_METRICS_PORT": "0",
                "SYNTHESIS_RETRIEVAL_ADDR": retrieval,
                "SYNTHESIS_VALIDATOR_ADDR": validator,
                **env,
            }
        )
        app = synthesis_server.create_app(config)
        await app.start()
        apps.append(app)
        return f"127.0.0.1:{app.port}"

    yield start
    for app in apps:
        await app.stop(0)


async def _ask(address: str, deadline_s: float = 30.0) -> spb.SynthesizeAnswerResponse:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = spb_grpc.SynthesisServiceStub(channel)
        return await stub.SynthesizeAnswer(
            spb.SynthesizeAnswerRequest(question=QUESTION, top_k=5), timeout=deadline_s
        )


def _dependency(error: grpc.RpcError) -> str:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info.metadata.get("dependency", "")
    return ""


class TestSynthesisFailsClosed:
    async def test_control_a_reachable_validator_is_consulted(
        self, stack: Stack, fake_validator: tuple[FakeValidator, str], synthesis_with: Any
    ) -> None:
        # Proves the set-up: with the fake validator answering in time its verdict is used, so
        # the failures below are caused by the outage alone.
        servicer, address = fake_validator
        synthesis = await synthesis_with(stack.retrieval, address)

        response = await _ask(synthesis)

        assert response.status == spb.ANSWER_STATUS_ANSWERED
        assert servicer.answers == [response.answer]

    async def test_validator_down_is_unavailable_never_an_answer(
        self, stack: Stack, synthesis_with: Any
    ) -> None:
        synthesis = await synthesis_with(stack.retrieval, closed_port())

        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _ask(synthesis)

        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert error_reason(info.value) == "DEPENDENCY_UNAVAILABLE"
        assert _dependency(info.value) == "validator"

    async def test_retrieval_down_is_unavailable(self, stack: Stack, synthesis_with: Any) -> None:
        synthesis = await synthesis_with(closed_port(), stack.validator)

        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _ask(synthesis)

        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert error_reason(info.value) == "DEPENDENCY_UNAVAILABLE"
        assert _dependency(info.value) == "retrieval"

    async def test_get_document_with_retrieval_down_is_unavailable(
        self, stack: Stack, synthesis_with: Any
    ) -> None:
        synthesis = await synthesis_with(closed_port(), stack.validator)

        async with grpc.aio.insecure_channel(synthesis) as channel:
            stub = spb_grpc.SynthesisServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.GetDocument(spb.GetDocumentRequest(doc_id="IPC_420"), timeout=30)

        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert error_reason(info.value) == "DEPENDENCY_UNAVAILABLE"
        assert _dependency(info.value) == "retrieval"

    async def test_validator_slower_than_its_limit_is_deadline_exceeded(
        self, stack: Stack, fake_validator: tuple[FakeValidator, str], synthesis_with: Any
    ) -> None:
        servicer, address = fake_validator
        servicer.delay_s = 2.0  # it would say GROUNDED, but too late
        synthesis = await synthesis_with(
            stack.retrieval, address, SYNTHESIS_VALIDATOR_TIMEOUT_S="0.3"
        )

        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _ask(synthesis)

        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert error_reason(info.value) == "DEPENDENCY_TIMEOUT"
        assert len(servicer.answers) == 1  # the draft got there; its late verdict was not used

    async def test_validator_slower_than_the_callers_deadline_is_deadline_exceeded(
        self, stack: Stack, fake_validator: tuple[FakeValidator, str], synthesis_with: Any
    ) -> None:
        servicer, address = fake_validator
        servicer.delay_s = 3.0
        synthesis = await synthesis_with(stack.retrieval, address)

        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _ask(synthesis, deadline_s=1.0)

        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert len(servicer.answers) == 1  # the validator was reached; it was too slow to matter

    @pytest.mark.parametrize(
        "code",
        [
            grpc.StatusCode.INTERNAL,
            grpc.StatusCode.INVALID_ARGUMENT,
            grpc.StatusCode.RESOURCE_EXHAUSTED,
        ],
    )
    async def test_validator_error_is_unavailable_never_an_answer(
        self,
        stack: Stack,
        fake_validator: tuple[FakeValidator, str],
        synthesis_with: Any,
        code: grpc.StatusCode,
    ) -> None:
        servicer, address = fake_validator
        servicer.code = code
        synthesis = await synthesis_with(stack.retrieval, address)

        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _ask(synthesis)

        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert code.name in (info.value.details() or "")
        assert _dependency(info.value) == "validator"
        assert len(servicer.answers) == 1  # the draft reached the failing validator


_EVIDENCE = [Chunk(semantic_id="IPC_420_0", doc_id="IPC_420", text="Whoever cheats is punished.")]


class TestClientErrorMapping:
    async def test_validator_client_maps_each_failure(
        self, fake_validator: tuple[FakeValidator, str]
    ) -> None:
        servicer, address = fake_validator
        channel = open_channel(address)
        client = GrpcValidator(channel)
        try:
            report = await client.validate("x [IPC_420_0].", _EVIDENCE, timeout_s=5)
            assert report.verdict is Verdict.GROUNDED

            servicer.code = grpc.StatusCode.INVALID_ARGUMENT
            with pytest.raises(DependencyUnavailableError, match="INVALID_ARGUMENT") as unavailable:
                await client.validate("x", _EVIDENCE, timeout_s=5)
            assert unavailable.value.dependency == "validator"

            servicer.code, servicer.delay_s = None, 1.0
            with pytest.raises(DependencyTimeoutError):
                await client.validate("x", _EVIDENCE, timeout_s=0.2)
        finally:
            await channel.close()

    async def test_validator_client_unreachable_is_unavailable(self) -> None:
        channel = open_channel(closed_port())
        try:
            with pytest.raises(DependencyUnavailableError, match="UNAVAILABLE"):
                await GrpcValidator(channel).validate("x", _EVIDENCE, timeout_s=5)
        finally:
            await channel.close()

    async def test_retriever_client_passes_field_violations_on(self, stack: Stack) -> None:
        channel = open_channel(stack.retrieval)
        try:
            with pytest.raises(InvalidInputError) as info:
                await GrpcRetriever(channel).retrieve(
                    "theft", top_k=5, acts=["NOPE"], doc_ids=[], timeout_s=10
                )
        finally:
            await channel.close()
        assert [v.field for v in info.value.violations] == ["filters.acts[0]"]

    async def test_retriever_invalid_argument_without_details_is_unavailable(self) -> None:
        # A retrieval that rejects us without saying which field is broken is a dependency
        # failure, not the caller's bad input.
        async def reject(request: Any, context: aio.ServicerContext[Any, Any]) -> Any:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no")

        handler = grpc.method_handlers_generic_handler(
            "grounded.retrieval.v1.RetrievalService",
            {"RetrievePassages": grpc.unary_unary_rpc_method_handler(reject)},
        )
        server = aio.server()
        server.add_generic_rpc_handlers((handler,))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        channel = open_channel(f"127.0.0.1:{port}")
        try:
            with pytest.raises(DependencyUnavailableError, match="rejected the request"):
                await GrpcRetriever(channel).retrieve(
                    "theft", top_k=5, acts=[], doc_ids=[], timeout_s=5
                )
        finally:
            await channel.close()
            await server.stop(0)

    async def test_synthesis_passes_retrievals_field_violation_to_its_caller(
        self, stack: Stack
    ) -> None:
        request = spb.SynthesizeAnswerRequest(question="What is theft?")
        request.filters.acts.append("NOPE")
        async with grpc.aio.insecure_channel(stack.synthesis) as channel:
            stub = spb_grpc.SynthesisServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.SynthesizeAnswer(request, timeout=30)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "filters.acts[0]" in field_violations(info.value)

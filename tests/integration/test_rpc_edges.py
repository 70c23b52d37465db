"""Calls outside the answer path behave as gRPC users expect: a caller that goes away in the
middle of a stream is an ordinary CANCELLED (counted and logged as such under its request id,
with no ERROR line: alerts fire on those), health's List answers, and a method nobody
implemented is UNIMPLEMENTED."""

from __future__ import annotations

import asyncio
import gc
import logging

import grpc
import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common.interceptors import ServiceInterceptor
from tests.integration.conftest import Stack

pytestmark = pytest.mark.integration

QUESTION = "What is the punishment for theft?"


@pytest.mark.parametrize("after", [1, 2], ids=["after-the-evidence", "after-a-sentence"])
async def test_a_stream_cancelled_by_its_caller_logs_no_error(
    stack: Stack, caplog: pytest.LogCaptureFixture, after: int
) -> None:
    request_id = f"cancel-after-{after}"
    with caplog.at_level(logging.INFO):
        async with grpc.aio.insecure_channel(stack.synthesis) as channel:
            call = spb_grpc.SynthesisServiceStub(channel).StreamAnswer(
                spb.SynthesizeAnswerRequest(question=QUESTION),
                timeout=30,
                metadata=(("x-request-id", request_id),),
            )
            kinds = []
            async for event in call:
                kinds.append(event.WhichOneof("event"))
                if len(kinds) == after:
                    call.cancel()
                    break
        await asyncio.sleep(0.3)
        gc.collect()  # a task's exception nobody read is logged when the task is collected
        await asyncio.sleep(0)
    assert kinds[:after] == ["evidence", "sentence"][:after]
    # Closing the stream from gRPC's own task once failed to restore the request-id context
    # there ("was created in a different Context"), and asyncio logged the task's exception.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    (access,) = [
        r
        for r in caplog.records
        if r.getMessage() == "rpc" and getattr(r, "method", "") == "StreamAnswer"
    ]
    assert access.code == "CANCELLED", access.code  # type: ignore[attr-defined]
    assert access.request_id == request_id  # type: ignore[attr-defined]


@pytest.mark.parametrize("service", ["retrieval", "synthesis", "validator"])
async def test_health_list_names_every_service_with_its_status(stack: Stack, service: str) -> None:
    """grpc.health.v1.Health/List, which reflection advertises (the library leaves it
    unimplemented; it used to answer INTERNAL)."""
    async with grpc.aio.insecure_channel(getattr(stack, service)) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).List(
            health_pb2.HealthListRequest(), timeout=10
        )
    name = f"grounded.{service}.v1.{service.capitalize()}Service"
    assert {k: v.status for k, v in reply.statuses.items()} == {
        "": health_pb2.HealthCheckResponse.SERVING,
        name: health_pb2.HealthCheckResponse.SERVING,
    }


async def _health_call_through_our_interceptor(
    servicer: health_pb2_grpc.HealthServicer, method: str, request: object
) -> grpc.aio.AioRpcError:
    """Serve ``servicer`` on a bare server with our interceptor; the error ``method`` raises."""
    server = grpc.aio.server(interceptors=[ServiceInterceptor("test")])
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await getattr(health_pb2_grpc.HealthStub(channel), method)(request, timeout=10)
    finally:
        await server.stop(None)
    return caught.value


async def test_a_method_a_servicer_leaves_unimplemented_is_unimplemented() -> None:
    """A generated servicer's default raises NotImplementedError: through our interceptor that
    is UNIMPLEMENTED, as gRPC says for an unknown method, not INTERNAL."""
    # The generated base class: every method raises NotImplementedError.
    error = await _health_call_through_our_interceptor(
        health_pb2_grpc.HealthServicer(), "List", health_pb2.HealthListRequest()
    )
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED
    assert error.details() == "List is not implemented by this server"


async def test_a_not_implemented_error_from_deeper_down_is_internal() -> None:
    """Only a generated default (which sets UNIMPLEMENTED first) is UNIMPLEMENTED; the same
    exception raised by the code a handler calls is a bug: INTERNAL, logged with its traceback."""

    class Broken(health_pb2_grpc.HealthServicer):
        async def Check(self, request: object, context: object) -> object:
            raise NotImplementedError("reconstruct_all is not available for this index")

    error = await _health_call_through_our_interceptor(
        Broken(), "Check", health_pb2.HealthCheckRequest()
    )
    assert error.code() == grpc.StatusCode.INTERNAL

"""A server handles at most *_MAX_CONCURRENT_RPCS calls at once: one more is RESOURCE_EXHAUSTED
(reason OVERLOADED) before any work, while health checks, which the kubelet's probes make,
are still answered; 0 is no limit. Served by GrpcService as every service runs it, with a
servicer that holds its calls until released (no models, no index)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import grpc
import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common.config import EnvReader, ServerSettings
from services.common.metrics import RPC_REQUESTS
from services.common.server import GrpcService
from tests.support.grpc_helpers import counter_reaches, error_reason, retry_delay_s

pytestmark = pytest.mark.integration

SYNTHESIS = spb.DESCRIPTOR.services_by_name["SynthesisService"].full_name
REQUEST = spb.SynthesizeAnswerRequest(question="What is theft?")


class _Held(spb_grpc.SynthesisServiceServicer):
    """Answers each call once ``release`` is set; ``entered`` counts the calls it got."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = 0

    async def SynthesizeAnswer(
        self, request: spb.SynthesizeAnswerRequest, context: object
    ) -> spb.SynthesizeAnswerResponse:
        self.entered += 1
        await self.release.wait()
        return spb.SynthesizeAnswerResponse(answer="held")

    async def StreamAnswer(
        self, request: spb.SynthesizeAnswerRequest, context: object
    ) -> AsyncIterator[spb.StreamAnswerResponse]:
        self.entered += 1
        await self.release.wait()
        yield spb.StreamAnswerResponse()


async def _serve(limit: str, servicer: _Held) -> tuple[GrpcService, int]:
    settings = ServerSettings.from_env(
        EnvReader("SYNTHESIS_", {"SYNTHESIS_PORT": "0", "SYNTHESIS_MAX_CONCURRENT_RPCS": limit}),
        default_port=0,
        default_metrics_port=-1,
    )
    service = GrpcService(label="synthesis", service_names=[SYNTHESIS], settings=settings)
    port = await service.start(
        lambda server: spb_grpc.add_SynthesisServiceServicer_to_server(servicer, server)
    )
    await service.mark_serving()
    return service, port


async def _entered(servicer: _Held, calls: int) -> None:
    """Wait (up to 5 s) until ``calls`` calls are inside the servicer."""
    async with asyncio.timeout(5):
        while servicer.entered < calls:  # noqa: ASYNC110 (the servicer counts; nothing to await)
            await asyncio.sleep(0.01)


async def test_one_call_past_the_limit_is_resource_exhausted_and_health_still_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    servicer = _Held()
    service, port = await _serve("2", servicer)
    refused = RPC_REQUESTS.labels(
        "synthesis", "SynthesizeAnswer", "RESOURCE_EXHAUSTED", "OVERLOADED"
    )
    before = refused._value.get()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = spb_grpc.SynthesisServiceStub(channel)
            # The limit is full: one answer and one stream under way.
            held = asyncio.ensure_future(stub.SynthesizeAnswer(REQUEST, timeout=30))
            stream = stub.StreamAnswer(REQUEST, timeout=30)
            streamed = asyncio.ensure_future(stream.read())
            await _entered(servicer, 2)

            with caplog.at_level(logging.INFO), pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.SynthesizeAnswer(REQUEST, timeout=10)
            error = caught.value
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert error_reason(error) == "OVERLOADED"
            assert retry_delay_s(error) == 0.5  # google.rpc.RetryInfo: retry no sooner
            assert error.details() == (
                "the synthesis server is already handling 2 calls, as many as it takes at once "
                "(SYNTHESIS_MAX_CONCURRENT_RPCS); retry with backoff"
            )
            assert servicer.entered == 2  # refused before the servicer ran
            # Counted as what the caller saw (as the handler unwinds: waited for).
            assert await counter_reaches(refused, before + 1) == before + 1
            (line,) = [r for r in caplog.records if r.getMessage() == "request failed"]
            assert line.levelno == logging.WARNING

            # A kubelet's probes are never refused: a busy pod is neither unready nor killed.
            health = health_pb2_grpc.HealthStub(channel)
            for name in ("", SYNTHESIS):
                reply = await health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING

            servicer.release.set()
            assert (await held).answer == "held"
            await streamed
            stream.cancel()
            # Both places freed, the stream's too: two new calls are held inside at once (a
            # stream that kept its place would leave room for one).
            servicer.release = asyncio.Event()
            again = [
                asyncio.ensure_future(stub.SynthesizeAnswer(REQUEST, timeout=10)) for _ in "ab"
            ]
            await _entered(servicer, 4)
            servicer.release.set()
            assert [r.answer for r in await asyncio.gather(*again)] == ["held", "held"]
    finally:
        servicer.release.set()
        await service.stop(0)


async def test_zero_is_no_limit() -> None:
    servicer = _Held()
    service, port = await _serve("0", servicer)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = spb_grpc.SynthesisServiceStub(channel)
            calls = [
                asyncio.ensure_future(stub.SynthesizeAnswer(REQUEST, timeout=30)) for _ in range(20)
            ]
            await _entered(servicer, 20)
            servicer.release.set()
            assert [r.answer for r in await asyncio.gather(*calls)] == ["held"] * 20
    finally:
        servicer.release.set()
        await service.stop(0)

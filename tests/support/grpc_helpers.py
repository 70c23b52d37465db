"""Helpers for tests over gRPC: rich errors unpacked, health, a question asked, a call counted."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status


def field_violations(error: grpc.RpcError) -> dict[str, str]:
    """field → description from a BadRequest detail of a failed call."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, "the error carries no google.rpc.Status"
    found: dict[str, str] = {}
    for detail in status.details:
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            found.update({v.field: v.description for v in bad.field_violations})
    return found


def error_reason(error: grpc.RpcError) -> str:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info.reason
    return ""


def retry_delay_s(error: grpc.RpcError) -> float | None:
    """The seconds of a google.rpc.RetryInfo detail of a failed call; None without one."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    for detail in status.details:
        retry = error_details_pb2.RetryInfo()
        if detail.Unpack(retry):
            return float(retry.retry_delay.ToTimedelta().total_seconds())
    return None


async def health_status(address: str, service: str) -> int:
    """The gRPC health status a server reports for ``service`` (``HealthCheckResponse``)."""
    async with aio.insecure_channel(address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=5
        )
    return int(reply.status)


async def synthesize(address: str, question: str) -> spb.SynthesizeAnswerResponse:
    """SynthesizeAnswer for ``question`` at ``address`` (30 s deadline)."""
    async with aio.insecure_channel(address) as channel:
        response: spb.SynthesizeAnswerResponse = await spb_grpc.SynthesisServiceStub(
            channel
        ).SynthesizeAnswer(spb.SynthesizeAnswerRequest(question=question), timeout=30)
    return response


async def counter_reaches(counter: Any, value: float, timeout_s: float = 2.0) -> float:
    """A Prometheus ``counter``'s value once it reaches ``value``, or after ``timeout_s``. Our
    interceptor counts a call as its handler unwinds, which on a loaded machine can end after
    the caller has its status (and after the test server's ``stop`` has returned)."""
    for _ in range(int(timeout_s / 0.01)):
        if counter._value.get() >= value:
            break
        await asyncio.sleep(0.01)
    return float(counter._value.get())

"""The bind address a *_HOST setting names, bound for real: gRPC (GrpcService) and the metrics
endpoint (serve_metrics) both listen on an IPv6 host, and `::` serves IPv4 clients as well, so
one value suits IPv6 single-stack, dual-stack and IPv4 clusters alike."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common.config import EnvReader, ServerSettings
from services.common.metrics import serve_metrics
from services.common.server import GrpcService
from tests.support.network import ipv6_loopback

pytestmark = pytest.mark.integration


def _dual_stack() -> bool:
    """Whether an IPv6 wildcard socket also takes IPv4 (Linux's default bindv6only=0)."""
    flag = Path("/proc/sys/net/ipv6/bindv6only")
    return flag.is_file() and flag.read_text().strip() == "0"


needs_ipv6 = pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback on this machine")


def _settings(host: str) -> ServerSettings:
    """What a service reads from V_HOST=host (its gRPC port 0: any free one)."""
    return ServerSettings.from_env(
        EnvReader("V_", {"V_HOST": host, "V_PORT": "0"}), default_port=0, default_metrics_port=-1
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::", 0))
        port: int = probe.getsockname()[1]
    return port


async def _health(address: str) -> health_pb2.HealthCheckResponse.ServingStatus.ValueType:
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=""), timeout=5
        )
    return reply.status


@needs_ipv6
@pytest.mark.parametrize("host", ["::1", "[::1]", "::"])
async def test_grpc_listens_on_an_ipv6_host(host: str) -> None:
    service = GrpcService(label="v", service_names=[], settings=_settings(host))
    port = await service.start(lambda server: None)
    await service.mark_serving()
    try:
        assert await _health(f"ipv6:[::1]:{port}") == health_pb2.HealthCheckResponse.SERVING
        if host == "::" and _dual_stack():
            assert await _health(f"ipv4:127.0.0.1:{port}") == health_pb2.HealthCheckResponse.SERVING
    finally:
        await service.server.stop(None)


@needs_ipv6
@pytest.mark.parametrize("host", ["::1", "[::1]", "::"])
def test_metrics_listen_on_an_ipv6_host(host: str) -> None:
    server = serve_metrics(_free_port(), _settings(host).host)
    assert server is not None, "the metrics endpoint did not start"
    port = server.server_port
    try:
        urls = [f"http://[::1]:{port}/metrics"]
        if host == "::" and _dual_stack():
            urls.append(f"http://127.0.0.1:{port}/metrics")
        for url in urls:
            with urllib.request.urlopen(url, timeout=5) as reply:
                assert reply.status == 200, url
                assert b"grounded_" in reply.read(), url
    finally:
        server.shutdown()
        server.server_close()

"""A no-op unary echo gRPC server: the loopback ceiling our RPCs are measured against."""

from __future__ import annotations

from typing import Any

import grpc
from grpc import aio

ECHO_METHOD = "/grounded.bench.Echo/Echo"


def _identity(data: bytes) -> bytes:
    return data


async def _echo(request: bytes, context: aio.ServicerContext[Any, Any]) -> bytes:
    return request


async def start_echo_server(host: str = "127.0.0.1") -> tuple[aio.Server, int]:
    """Start the echo server on a free port; bytes in, the same bytes out (no proto work)."""
    server = aio.server()
    handler = grpc.method_handlers_generic_handler(
        "grounded.bench.Echo",
        {
            "Echo": grpc.unary_unary_rpc_method_handler(
                _echo, request_deserializer=_identity, response_serializer=_identity
            )
        },
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port(f"{host}:0")
    await server.start()
    return server, port


def echo_callable(channel: aio.Channel, payload: bytes) -> Any:
    """An awaitable factory calling Echo with ``payload`` (shaped like the real request size)."""
    call = channel.unary_unary(
        ECHO_METHOD, request_serializer=_identity, response_deserializer=_identity
    )

    async def invoke() -> bytes:
        result: bytes = await call(payload, timeout=10)
        return result

    return invoke

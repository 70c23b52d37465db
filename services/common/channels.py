"""Client channels and outbound-call helpers: one place builds channels, deadlines and metadata."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import grpc
from grpc import aio

from services.common.config import LOAD_BALANCING, TlsSettings
from services.common.interceptors import REQUEST_ID_KEY
from services.common.logs import request_id_var
from services.common.status import reason_of
from services.common.tracing import client_interceptors


def client_credentials(tls: TlsSettings) -> grpc.ChannelCredentials:
    """Channel TLS credentials: CA to verify the server, and our own cert/key for mutual TLS."""
    ca = Path(tls.ca_file).read_bytes() if tls.ca_file else None
    key = Path(tls.key_file).read_bytes() if tls.key_file else None
    cert = Path(tls.cert_file).read_bytes() if tls.cert_file else None
    return grpc.ssl_channel_credentials(
        root_certificates=ca, private_key=key, certificate_chain=cert
    )


@dataclass(frozen=True, slots=True)
class ChannelPolicy:
    """How a client channel spreads calls, retries and reconnects (the gRPC service config).

    ``round_robin`` over every address the target resolves to (``dns:///retrieval:50051`` over a
    headless Service gives one per pod; ``ipv4:127.0.0.1:1,127.0.0.1:2`` lists them), instead of
    ``pick_first``'s one pinned connection. ``retry_methods`` (``"package.Service/Method"``,
    idempotent calls only) are retried on UNAVAILABLE up to ``max_attempts`` times in all, with
    exponential backoff from ``initial_backoff_s`` to ``max_backoff_s``; every attempt stays
    inside the call's deadline. ``max_reconnect_backoff_s`` caps gRPC's reconnect backoff
    (default 120 s), so a dependency that comes back is dialled again within that time.

    ``health_service`` (a full service name) turns on gRPC's client-side health checking: the
    channel watches each address's ``grpc.health.v1.Health`` status for that name and
    round-robins over the SERVING ones only. A pod still warming up, draining (lame duck) or
    whose model failed is then skipped at once, also when the client reaches it by address
    (a headless Service lists a pod restarted in place under the same IP). A server without
    the health service counts as healthy (gRFC A17).
    """

    load_balancing: str = "round_robin"
    retry_methods: Sequence[str] = ()
    max_attempts: int = 4
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 1.0
    max_reconnect_backoff_s: float = 1.0
    health_service: str = ""

    def service_config(self) -> str:
        """The service config JSON for ``grpc.service_config``."""
        config: dict[str, object] = {"loadBalancingConfig": [{self.load_balancing: {}}]}
        if self.health_service:
            config["healthCheckConfig"] = {"serviceName": self.health_service}
        if self.retry_methods and self.max_attempts > 1:
            config["methodConfig"] = [
                {
                    "name": [
                        {"service": m.split("/", 1)[0], "method": m.split("/", 1)[1]}
                        for m in self.retry_methods
                    ],
                    "retryPolicy": {
                        "maxAttempts": self.max_attempts,
                        "initialBackoff": f"{self.initial_backoff_s:g}s",
                        "maxBackoff": f"{self.max_backoff_s:g}s",
                        "backoffMultiplier": 2,
                        "retryableStatusCodes": ["UNAVAILABLE"],
                    },
                }
            ]
        return json.dumps(config, separators=(",", ":"))

    def __post_init__(self) -> None:
        if self.load_balancing not in LOAD_BALANCING:
            raise ValueError(f"load_balancing must be one of {LOAD_BALANCING}")


def open_channel(
    address: str,
    *,
    tls: TlsSettings | None = None,
    max_message_bytes: int = 4 * 1024 * 1024,
    server_name_override: str = "",
    policy: ChannelPolicy | None = None,
) -> aio.Channel:
    """An aio channel to a peer; TLS when the settings carry a CA file.

    Without a ``policy`` the channel is gRPC's default (pick_first, no retries), as tools and
    tests that talk to one server want.
    """
    options: list[tuple[str, int | str]] = [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
    ]
    if policy is None:
        options.append(("grpc.enable_retries", 0))
    else:
        reconnect_ms = int(policy.max_reconnect_backoff_s * 1000)
        options += [
            ("grpc.enable_retries", 1),
            ("grpc.service_config", policy.service_config()),
            ("grpc.max_reconnect_backoff_ms", reconnect_ms),
            ("grpc.initial_reconnect_backoff_ms", min(reconnect_ms, 100)),
            ("grpc.min_reconnect_backoff_ms", min(reconnect_ms, 100)),
            # Re-resolve soon after a connection drops (a pod went away, max age reached).
            ("grpc.dns_min_time_between_resolutions_ms", 1000),
        ]
    if server_name_override:
        options.append(("grpc.ssl_target_name_override", server_name_override))
    interceptors = client_interceptors()  # OpenTelemetry, when tracing is on
    if tls is not None and tls.ca_file:
        return aio.secure_channel(
            address, client_credentials(tls), options=options, interceptors=interceptors
        )
    return aio.insecure_channel(address, options=options, interceptors=interceptors)


async def ready_within(channel: aio.Channel, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for ``channel`` to be READY (connecting it if idle).

    A dependency that restarted is reachable again as soon as the channel's reconnect backoff
    (capped by ``ChannelPolicy.max_reconnect_backoff_s``) runs out; a call made before then
    would fail fast with UNAVAILABLE. Waiting a bounded time first lets the first call after
    a restart succeed, while a dependency that stays down still fails the call (after at most
    ``timeout_s`` more). Returns whether the channel became READY.
    """
    if channel.get_state(try_to_connect=True) == grpc.ChannelConnectivity.READY:
        return True
    if timeout_s <= 0:
        return False
    try:
        await asyncio.wait_for(channel.channel_ready(), timeout=timeout_s)
    except TimeoutError:
        return False
    return True


_T = TypeVar("_T")


# At most this share of a call's time budget is spent waiting for a reconnecting channel.
_READY_SHARE = 0.5


async def call_idempotent(
    call: Callable[[float], Awaitable[_T]],
    timeout_s: float,
    *,
    channel: aio.Channel | None = None,
    connect_wait_s: float = 0.0,
    attempts: int = 2,
) -> _T:
    """Run an idempotent unary ``call(timeout_s)``, again on UNAVAILABLE (unless its reason is
    MODEL_UNAVAILABLE), or on a server at its concurrency limit (RESOURCE_EXHAUSTED /
    OVERLOADED), while time is left.

    With a ``channel``, first wait up to ``connect_wait_s`` (at most half the budget) for it to
    be READY (``ready_within``), so the first call after a dependency restarts gets through.

    The channel's retry policy (``ChannelPolicy``) covers calls that never reached a server.
    It cannot retry a call whose server died after answering with headers (the servers echo the
    request id in initial metadata at once, which commits the call): that call fails
    UNAVAILABLE ("Stream removed"), and this sends it once more, which round_robin routes to
    another server. A server at its limit refuses before any work: round_robin sends the next
    attempt to another one, which may have room. Every attempt gets only what is left of
    ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    if channel is not None:
        await ready_within(channel, min(connect_wait_s, timeout_s * _READY_SHARE))
    for attempt in range(1, attempts + 1):
        try:
            return await call(max(0.001, deadline - time.monotonic()))
        except aio.AioRpcError as error:
            if (
                attempt == attempts
                or not _worth_another(error)
                or deadline - time.monotonic() <= 0.01
            ):
                raise
    raise AssertionError("unreachable")  # the loop returns or raises


def _worth_another(error: aio.AioRpcError) -> bool:
    """A failure another server (or the same one a moment later) may not repeat.

    Not UNAVAILABLE / MODEL_UNAVAILABLE: the server's model failed on this request and it has
    taken itself out of rotation; the same request sent to the next replica would likely fail
    that one's model too (a query of death took out two validators that way)."""
    code, reason = error.code(), reason_of(error)
    if code == grpc.StatusCode.UNAVAILABLE:
        return reason != "MODEL_UNAVAILABLE"
    return code == grpc.StatusCode.RESOURCE_EXHAUSTED and reason == "OVERLOADED"


def outbound_metadata() -> tuple[tuple[str, str], ...]:
    """Metadata for a downstream call: carries the current request id."""
    request_id = request_id_var.get()
    return ((REQUEST_ID_KEY, request_id),) if request_id else ()


def remaining_s(deadline: float | None, limit_s: float) -> float:
    """Seconds a downstream call may take: min(time left on the caller's deadline, our limit)."""
    if deadline is None:
        return limit_s
    return max(0.0, min(limit_s, deadline - time.monotonic()))

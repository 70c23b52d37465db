"""Sustained load on SynthesizeAnswer against Redis + the three real services as processes.

    python -m bench.load --duration 60 --concurrency 8 32 --index-dir var/index [--name load]

Starts a private redis-server and the three services (``python -m services.<name>``) on free
loopback ports (``stack.processes.ProcessStack``), builds the IPC index into --index-dir when it
is missing, then for each concurrency drives SynthesizeAnswer for --duration seconds with a
rotating set of IPC questions (answerable and not). Records throughput, p50/p95/p99, the error
rate (target 0) and each process's RSS (VmRSS) after warm-up and at the end (target growth
<= 10 %) and its peak since it started (VmHWM: for retrieval, the start-up), with the exact
command and the machine's load average, in reports/<name>.json and reports/<name>.md.
Everything it started is stopped with SIGTERM (SIGKILL only past a timeout).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc

from bench.loadgen import LoadResult, machine_context, rss_kib, run_load, write_report
from stack.processes import ROOT, ProcessStack, base, served_calls

IPC = ROOT / "data" / "corpora" / "indian_law" / "ipc.json"
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


def stack_rss_kib(stack: ProcessStack, field: str = "VmRSS") -> dict[str, int]:
    return {name: rss_kib(p.proc.pid, field) for name, p in stack.processes.items()}


def retrieval_calls(stack: ProcessStack) -> dict[str, int]:
    """RetrievePassages calls each retrieval server answered OK (from its /metrics)."""
    return {
        name: served_calls(process.metrics_url, "RetrievePassages")
        for name, process in stack.processes.items()
        if base(name) == "retrieval"
    }


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
            report["rss_kib_started"] = stack_rss_kib(stack)
            address = stack.synthesis
            # One pass over every question first: the RSS baseline is a warmed-up process.
            asyncio.run(drive(address, 1, 0.001))
            baseline = stack_rss_kib(stack)
            report["rss_kib_warm"] = baseline
            for concurrency in args.concurrency:
                before = stack_rss_kib(stack)
                calls_before = retrieval_calls(stack)
                result, statuses = asyncio.run(drive(address, concurrency, args.duration))
                after = stack_rss_kib(stack)
                calls_after = retrieval_calls(stack)
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
            report["rss_kib_end"] = stack_rss_kib(stack)
            # The peak since each process started: for a retrieval server, its start-up (the
            # ONNX export and check, with torch's weights still loaded), which a limit must fit.
            report["rss_kib_peak"] = stack_rss_kib(stack, "VmHWM")
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
        "| process | RSS started (MiB) | RSS warm (MiB) | RSS end (MiB) | growth since warm "
        "| peak RSS (MiB) |",
    ]
    lines.append("|---|---:|---:|---:|---:|---:|")
    peaks = report.get("rss_kib_peak", {})
    for name in report["rss_kib_started"]:
        peak = f"{peaks[name] / 1024:.0f}" if name in peaks else "–"
        lines.append(
            f"| {name} | {report['rss_kib_started'][name] / 1024:.0f} "
            f"| {report['rss_kib_warm'][name] / 1024:.0f} "
            f"| {report['rss_kib_end'][name] / 1024:.0f} "
            f"| {report['rss_growth_since_warm'][name]:+.1%} | {peak} |"
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

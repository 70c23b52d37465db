"""Validator latency in-process and over gRPC, against a no-op echo RPC measured in the same run.

    .venv/bin/python -m bench.validator_perf [--quick] [--out reports/validator_perf.json]

(a) In-process ``validate()`` on 10 cited sentences against 20 IPC chunks, pinned to one CPU:
    p50/p95 with a cold evidence cache (cleared before every call) and a warm one.
(b) ``ValidateAnswer`` over real in-process gRPC servers at concurrency 8 (the app as deployed;
    the same with a worker thread for every call; a bare server; the exact refusal, which runs
    no checks), and the echo server of bench/echo.py with a payload of the same size, one after
    the other in this process.
Targets (issue 4): in-process p95 <= 5 ms on one core; gRPC throughput >= 0.5 x echo. These
are the cheap (lexical) tiers alone: the entailment model is off here and measured by
bench.validator_model.
Writes reports/validator_perf.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from grounded.type.v1 import evidence_pb2, validation_pb2
from grounded.validator.v1 import validator_service_pb2 as pb
from grounded.validator.v1 import validator_service_pb2_grpc as pb_grpc
from grpc import aio

from bench.echo import echo_callable, start_echo_server
from bench.loadgen import (
    LoadResult,
    command_line,
    machine_context,
    percentile,
    run_load,
    write_report,
)
from services.common.evidence import Chunk
from services.common.refusal import REFUSAL
from services.common.validation import Verdict
from services.validator.config import ValidatorConfig
from services.validator.engine import clear_caches, validate
from services.validator.server import create_app
from services.validator.servicer import ValidatorServicer

ROOT: Final = Path(__file__).resolve().parents[1]
REPORTS: Final = ROOT / "reports"
SENTENCES: Final = 10
CHUNKS: Final = 20
CONCURRENCY: Final = 8
TARGET_P95_MS: Final = 5.0
TARGET_RATIO: Final = 0.5


def workload() -> tuple[str, list[Chunk]]:
    """20 IPC sections that state a punishment, and a 10-sentence answer citing 10 of them.

    Each sentence restates the start of its section in the answer's own words around it, so
    every rule (coverage, numbers, negation, missing citation) does its full work.
    """
    sections = json.loads((ROOT / "data" / "corpora" / "indian_law" / "ipc.json").read_text())
    picked = [
        s
        for s in sections
        if re.search(r"\byears\b", s["section_desc"]) and 150 < len(s["section_desc"]) < 600
    ][:CHUNKS]
    chunks = [
        Chunk(
            semantic_id=f"IPC_{s['Section']}_0",
            doc_id=f"IPC_{s['Section']}",
            text=s["section_desc"],
        )
        for s in picked
    ]
    sentences = []
    for item in chunks[:SENTENCES]:
        words = item.text.rstrip(".").split()[:30]
        sentences.append(f"Under the Code, {' '.join(words)} [{item.semantic_id}].")
    return " ".join(sentences), chunks


def in_process(answer: str, chunks: list[Chunk], iterations: int) -> dict[str, Any]:
    """p50/p95 of validate() with a cold and a warm evidence cache, on one pinned CPU."""
    pinned = None
    if hasattr(os, "sched_setaffinity"):
        before = os.sched_getaffinity(0)
        pinned = min(before)
        os.sched_setaffinity(0, {pinned})
    try:
        report = validate(answer, chunks)
        results: dict[str, Any] = {
            "pinned_cpu": pinned,
            "verdict": report.verdict.value,
            "reason": report.reason.value,
            "sentences": len(report.sentences),
            "chunks": len(chunks),
        }
        for label, clear in (("cold", True), ("warm", False)):
            samples: list[float] = []
            for _ in range(iterations):
                if clear:
                    clear_caches()
                started = time.perf_counter()
                validate(answer, chunks)
                samples.append((time.perf_counter() - started) * 1000)
            results[label] = {
                "iterations": iterations,
                "p50_ms": round(percentile(samples, 50), 3),
                "p95_ms": round(percentile(samples, 95), 3),
                "max_ms": round(max(samples), 3),
            }
    finally:
        if pinned is not None:
            os.sched_setaffinity(0, before)
    return results


def grpc_request(answer: str, chunks: list[Chunk]) -> pb.ValidateAnswerRequest:
    """The ValidateAnswer request for ``answer`` over ``chunks`` (in evidence order)."""
    return pb.ValidateAnswerRequest(
        answer=answer,
        evidence=[
            evidence_pb2.Passage(semantic_id=c.semantic_id, doc_id=c.doc_id, text=c.text)
            for c in chunks
        ],
    )


async def over_grpc(answer: str, chunks: list[Chunk], duration_s: float) -> dict[str, Any]:
    """Throughput and latency of ValidateAnswer vs the echo RPC, all at concurrency 8.

    ``ValidateAnswer`` runs on the validator as deployed (``create_app``: the service
    interceptor with request ids, metrics and the access log, health and reflection) and on a
    bare ``aio.server`` holding only the servicer, like the echo server. A third run sends the
    exact refusal with the same evidence: the engine returns at once, so it measures what the
    RPC, the interceptor and the proto conversion cost alone, the ceiling for any validation.
    """
    request = grpc_request(answer, chunks)
    refusal = grpc_request(REFUSAL, chunks)
    payload = request.SerializeToString()

    # The lexical tiers' targets (issue 4) are measured without the entailment model; its cost
    # is bench.validator_model's subject.
    app = create_app(
        ValidatorConfig.from_env({"VALIDATOR_PORT": "0", "VALIDATOR_ENTAILMENT": "off"})
    )
    await app.start()
    # The same app with every call sent to a worker thread (VALIDATOR_INLINE_MAX_BYTES=0): what
    # validating small requests on the event loop saves.
    threaded = create_app(
        ValidatorConfig.from_env(
            {
                "VALIDATOR_PORT": "0",
                "VALIDATOR_INLINE_MAX_BYTES": "0",
                "VALIDATOR_ENTAILMENT": "off",
            }
        )
    )
    await threaded.start()
    bare = aio.server()
    pb_grpc.add_ValidatorServiceServicer_to_server(ValidatorServicer(), bare)
    bare_port = bare.add_insecure_port("127.0.0.1:0")
    await bare.start()
    echo_server, echo_port = await start_echo_server()
    runs = (
        (
            "validator",
            "ValidateAnswer",
            app.port,
            request,
            validation_pb2.VALIDATION_VERDICT_GROUNDED,
        ),
        (
            "validator_threaded",
            "ValidateAnswer (worker thread for every call)",
            threaded.port,
            request,
            validation_pb2.VALIDATION_VERDICT_GROUNDED,
        ),
        (
            "validator_bare",
            "ValidateAnswer (bare server)",
            bare_port,
            request,
            validation_pb2.VALIDATION_VERDICT_GROUNDED,
        ),
        (
            "validator_refusal",
            "ValidateAnswer, exact refusal (no checks run)",
            app.port,
            refusal,
            validation_pb2.VALIDATION_VERDICT_REFUSAL,
        ),
    )
    results: dict[str, LoadResult] = {}
    try:
        for key, name, port, message, verdict in runs:
            async with aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = pb_grpc.ValidatorServiceStub(channel)
                first = await stub.ValidateAnswer(message, timeout=10)
                if first.verdict != verdict:
                    raise RuntimeError(f"{name}: unexpected verdict {first.verdict}")

                async def call(stub: Any = stub, message: Any = message) -> Any:
                    return await stub.ValidateAnswer(message, timeout=10)

                results[key] = await run_load(
                    name, call, concurrency=CONCURRENCY, duration_s=duration_s
                )
        async with aio.insecure_channel(f"127.0.0.1:{echo_port}") as channel:
            results["echo"] = await run_load(
                "echo",
                echo_callable(channel, payload),
                concurrency=CONCURRENCY,
                duration_s=duration_s,
            )
    finally:
        await app.stop(None)
        await threaded.stop(None)
        await bare.stop(None)
        await echo_server.stop(None)
    echo = results["echo"].throughput
    report: dict[str, Any] = {"payload_bytes": len(payload)}
    report.update({key: result.as_dict() for key, result in results.items()})
    for key, suffix in (
        ("validator", ""),
        ("validator_threaded", "_threaded"),
        ("validator_bare", "_bare"),
        ("validator_refusal", "_refusal"),
    ):
        report["throughput_ratio" + suffix] = (
            round(results[key].throughput / echo, 3) if echo else None
        )
    return report


def markdown(report: dict[str, Any]) -> str:
    local, remote = report["in_process"], report["grpc"]
    rows = [
        remote[k]
        for k in ("validator", "validator_threaded", "validator_bare", "validator_refusal", "echo")
    ]
    lines = [
        "# Validator performance",
        "",
        f"Command: `{report['command']}`  ",
        f"git {report['machine']['git_revision']}; {report['machine']['cpus']} CPUs; "
        f"`uptime`: {report['uptime']}",
        "",
        f"## In-process validate(): {local['sentences']} sentences x {local['chunks']} chunks "
        f"(pinned to CPU {local['pinned_cpu']})",
        "",
        "| evidence cache | iterations | p50 ms | p95 ms | max ms | target p95 |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label in ("cold", "warm"):
        row = local[label]
        lines.append(
            f"| {label} | {row['iterations']} | {row['p50_ms']} | {row['p95_ms']} "
            f"| {row['max_ms']} | <= {TARGET_P95_MS} |"
        )
    lines += [
        "",
        f"## gRPC at concurrency {CONCURRENCY} (payload {remote['payload_bytes']} bytes)",
        "",
        "| RPC | calls | calls/s | p50 ms | p95 ms | p99 ms | errors |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        lines.append(
            f"| {row['name']} | {row['calls']} | {row['throughput']} | {row['p50_ms']} "
            f"| {row['p95_ms']} | {row['p99_ms']} | {row['errors']} |"
        )
    lines += [
        "",
        f"Throughput ratio ValidateAnswer / echo: **{remote['throughput_ratio']}** "
        f"(target >= {TARGET_RATIO}); worker thread for every call: "
        f"{remote['throughput_ratio_threaded']}; on the bare server: "
        f"{remote['throughput_ratio_bare']}; "
        f"exact refusal, no checks run: {remote['throughput_ratio_refusal']}.",
        "",
        "ValidateAnswer runs on the validator as deployed (service interceptor: request id, "
        "metrics, access log; logging left unconfigured here, so the access log is not "
        "written), the same app with every call in a worker thread (VALIDATOR_INLINE_MAX_BYTES=0), "
        "and a bare server with only the servicer. The exact-refusal run sends the "
        "same evidence but the engine returns at once: it is what the RPC, interceptor and "
        "proto conversion cost alone, the ceiling for the ratio. Every call sends the same "
        "request, so the evidence analyses are cached after the first call (as for chunks that "
        "recur across questions); the sentences are analysed afresh every call.",
        "",
        "Client, servers and load generator share this machine's cores; the in-process figures "
        "are one pinned CPU. Read them against the load average above.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smoke run: few iterations, 1 s load")
    parser.add_argument("--out", type=Path, default=REPORTS / "validator_perf.json")
    args = parser.parse_args(argv)
    iterations, duration = (30, 1.0) if args.quick else (500, 10.0)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    answer, chunks = workload()
    local = in_process(answer, chunks, iterations)
    if local["verdict"] != Verdict.GROUNDED.value:
        print(f"warning: the benchmark answer is {local['reason']}", file=sys.stderr)
    remote = asyncio.run(over_grpc(answer, chunks, duration))
    report = {
        "command": command_line("bench.validator_perf", argv),
        "uptime": uptime,
        "machine": machine_context(),
        "targets": {"in_process_p95_ms": TARGET_P95_MS, "throughput_ratio": TARGET_RATIO},
        "in_process": local,
        "grpc": remote,
    }
    write_report(args.out, report, markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

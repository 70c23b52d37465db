"""The query encoder on torch and on ONNX Runtime: latency per query, and whether they agree.

    .venv/bin/python -m bench.query_encoder [--queries N] [--repeats R] [--threads T]

Both runtimes read the packaged all-MiniLM-L6-v2 (``services.retrieval.embedding``): torch
through sentence-transformers, ONNX Runtime through the graph ``OnnxQueryEncoder`` exports at
start-up. In one process, on the IPC QA dev questions, each query is encoded by one runtime
then the other (the order alternating), ``R`` times: per-query p50 and p95 (with a bootstrap
interval), the ratio, the largest difference between the two vectors of a query, and whether
the top-10 FAISS neighbours in a built IPC index (``--index-dir``, default ``var/index``,
when present) are the same.
Also the time and memory (this process's RSS) the ONNX runtime adds at start-up, and the RSS once
the torch weights are released, as the service releases them ("serving").
Writes reports/query_encoder.{json,md}.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from bench.loadgen import (
    command_line,
    machine_context,
    p95_interval,
    percentile,
    rss_kib,
    write_report,
)
from services.retrieval.embedding import (
    Encoder,
    OnnxQueryEncoder,
    SentenceTransformerEncoder,
    load_encoder,
    set_torch_threads,
)
from services.retrieval.store import load_artifacts

ROOT: Final = Path(__file__).resolve().parents[1]
QUESTIONS: Final = ROOT / "data" / "eval" / "ipc_qa" / "ipc_qa_dev.json"
INDEX: Final = ROOT / "var" / "index"
REPORTS: Final = ROOT / "reports"
TOP_K: Final = 10


def latency_row(samples: Sequence[float]) -> dict[str, Any]:
    return {
        "p50_ms": round(percentile(list(samples), 50), 2),
        "p95_ms": round(percentile(list(samples), 95), 2),
        "p95_ci95_ms": p95_interval(samples),
        "n": len(samples),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=300, help="IPC QA dev questions used")
    parser.add_argument("--repeats", type=int, default=3, help="times each query is encoded")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads, both runtimes")
    parser.add_argument(
        "--index-dir", type=Path, default=INDEX, help="built index the neighbours are read from"
    )
    parser.add_argument("--out", type=Path, default=REPORTS / "query_encoder.json")
    args = parser.parse_args(argv)

    set_torch_threads(args.threads)
    base = load_encoder()
    assert isinstance(base, SentenceTransformerEncoder)
    base.encode(["warm up"])
    before = round(rss_kib(os.getpid()) / 1024, 1)
    started = time.perf_counter()
    onnx = OnnxQueryEncoder(base, threads=args.threads)
    start_s = time.perf_counter() - started
    onnx.encode(["warm up"])
    after = round(rss_kib(os.getpid()) / 1024, 1)

    questions = [q["question"] for q in json.loads(QUESTIONS.read_text())][: args.queries]
    runtimes: dict[str, Encoder] = {"torch": base, "onnx": onnx}
    times: dict[str, list[float]] = {name: [] for name in runtimes}
    for repeat in range(args.repeats):
        for n, question in enumerate(questions):
            order = list(runtimes) if (n + repeat) % 2 == 0 else list(reversed(runtimes))
            for name in order:
                began = time.perf_counter()
                runtimes[name].encode([question])
                times[name].append((time.perf_counter() - began) * 1000)

    torch_vectors = np.vstack([base.encode([q]) for q in questions])
    onnx_vectors = np.vstack([onnx.encode([q]) for q in questions])
    agreement: dict[str, Any] = {"index": None}
    if (args.index_dir / "manifest.json").is_file():
        artifacts = load_artifacts(args.index_dir, expected_model=base.name, expected_dim=base.dim)
        _, torch_top = artifacts.index.search(torch_vectors, TOP_K)
        _, onnx_top = artifacts.index.search(onnx_vectors, TOP_K)
        same = [bool(np.array_equal(a, b)) for a, b in zip(torch_top, onnx_top, strict=True)]
        agreement = {
            "index": str(args.index_dir),
            "index_version": artifacts.index_version,
            "same_top10": sum(same),
            "queries": len(same),
        }
    # What the service keeps once it has checked the session: the torch weights go
    # (OnnxQueryEncoder.release_torch, as build_searcher does, once nothing else holds them);
    # the vectors must not move.
    del base, runtimes
    onnx.release_torch()
    gc.collect()  # the torch model's module tree holds reference cycles
    serving = round(rss_kib(os.getpid()) / 1024, 1)
    if not np.array_equal(np.vstack([onnx.encode([q]) for q in questions]), onnx_vectors):
        raise SystemExit("the ONNX vectors changed when the torch weights were released")
    rows = {name: latency_row(samples) for name, samples in times.items()}
    report = {
        "command": command_line("bench.query_encoder", argv),
        "machine": machine_context(),
        "threads": args.threads,
        "queries": len(questions),
        "repeats": args.repeats,
        "latency": rows,
        "p50_ratio_torch_over_onnx": round(rows["torch"]["p50_ms"] / rows["onnx"]["p50_ms"], 2),
        "max_abs_difference": float(np.abs(torch_vectors - onnx_vectors).max()),
        "faiss": agreement,
        "onnx_start_s": round(start_s, 2),
        "rss_mib": {"torch_only": before, "with_onnx": after, "serving": serving},
    }
    lines = [
        "# Query encoder: torch vs ONNX Runtime",
        "",
        f"Command: `{report['command']}` (git {report['machine']['git_revision']}, load "
        f"{', '.join(f'{x:.2f}' for x in report['machine']['loadavg'])}, {args.threads} "
        f"thread(s); {len(questions)} IPC QA dev questions, each encoded alone {args.repeats} "
        "times per runtime, the runtimes alternating)",
        "",
        "| runtime | p50 | p95 [95 % bootstrap] |",
        "| --- | --- | --- |",
    ]
    for name, row in rows.items():
        low, high = row["p95_ci95_ms"]
        lines.append(f"| {name} | {row['p50_ms']} ms | {row['p95_ms']} [{low}–{high}] ms |")
    lines += [
        "",
        f"- torch / onnx at p50: **{report['p50_ratio_torch_over_onnx']}x**",
        f"- largest difference of a vector component: {report['max_abs_difference']:.3g}",
    ]
    if agreement["index"] is not None:
        lines.append(
            f"- top-{TOP_K} FAISS neighbours in {agreement['index']} identical for "
            f"{agreement['same_top10']} of {agreement['queries']} queries"
        )
    lines += [
        f"- ONNX runtime start-up (export, load, check): {report['onnx_start_s']} s; "
        f"RSS {before} → {after} MiB, {serving} MiB serving (torch weights released, as "
        "the service does)",
        "",
    ]
    write_report(args.out, report, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The first OpenAI call of a fresh process, with and without ``OpenAIGenerator.warm_up()``.

    .venv/bin/python -m bench.openai_first_call [--runs 5]

Each run starts a fresh interpreter (so nothing is imported yet) that builds an
``OpenAIGenerator`` against the loopback fake endpoint (tests/support/fake_openai.py), optionally
awaits ``warm_up()``, then times its first and second ``generate()``. Cold and warm runs
alternate so that a drifting machine affects both alike. The baseline is the second call of the
same process. Writes reports/openai_first_call.{json,md} (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from bench.loadgen import command_line, machine_context, write_report
from tests.support.fake_openai import FakeOpenAIServer, Reply

ROOT: Final = Path(__file__).resolve().parents[1]
REPORTS: Final = ROOT / "reports"

_PROBE: Final = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from services.common.evidence import Chunk, ScoredChunk
    from services.common.intent import Intent
    from services.synthesis.generation import GenerationRequest
    from services.synthesis.openai_generator import OpenAIGenerator, OpenAISettings

    async def main():
        gen = OpenAIGenerator(OpenAISettings(base_url=sys.argv[1], model="m", timeout_s=30))
        warm_ms = 0.0
        if sys.argv[2] == "warm":
            started = time.perf_counter()
            await gen.warm_up()
            warm_ms = (time.perf_counter() - started) * 1000
        chunk = Chunk(semantic_id="IPC_420_0", doc_id="IPC_420", text="Whoever cheats shall be punished.")
        request = GenerationRequest(
            question="What is the punishment for cheating?",
            evidence=(ScoredChunk(chunk, 1.0),),
            intent=Intent.PUNISHMENT,
        )
        calls = []
        for _ in range(2):
            started = time.perf_counter()
            await gen.generate(request, timeout_s=30)
            calls.append((time.perf_counter() - started) * 1000)
        await gen.aclose()
        print(json.dumps({"warm_up_ms": warm_ms, "first_ms": calls[0], "second_ms": calls[1]}))

    asyncio.run(main())
    """
)


def _probe(base_url: str, mode: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, base_url, mode],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=300,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(runs: int) -> dict[str, list[dict[str, float]]]:
    samples: dict[str, list[dict[str, float]]] = {"cold": [], "warm": []}
    with FakeOpenAIServer(Reply("Whoever cheats shall be punished [IPC_420_0].")) as server:
        for _ in range(runs):
            for mode in ("cold", "warm"):
                samples[mode].append(_probe(server.base_url, mode))
    return samples


def _median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(row[key] for row in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per variant")
    parser.add_argument("--out", type=Path, default=REPORTS / "openai_first_call.json")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    before = machine_context()
    samples = measure(args.runs)
    summary: dict[str, Any] = {
        mode: {key: round(_median(rows, key), 1) for key in ("warm_up_ms", "first_ms", "second_ms")}
        for mode, rows in samples.items()
    }
    report = {
        "command": command_line("bench.openai_first_call", argv),
        "machine_before": before,
        "machine_after": machine_context(),
        "median_ms": summary,
        "samples": samples,
    }
    lines = [
        "# First OpenAI call in a fresh process",
        "",
        f"Command: `{report['command']}`. Git {before['git_revision']}, "
        f"load {before['loadavg'][0]:.2f} before, {report['machine_after']['loadavg'][0]:.2f} after, "
        f"{before['cpus']} CPUs. Medians over {args.runs} fresh processes each, loopback fake "
        "endpoint.",
        "",
        "| variant | warm_up() ms | first generate() ms | second generate() ms | first / second |",
        "| --- | --- | --- | --- | --- |",
    ]
    for mode, row in summary.items():
        ratio = row["first_ms"] / row["second_ms"] if row["second_ms"] else float("nan")
        lines.append(
            f"| {mode} | {row['warm_up_ms']} | {row['first_ms']} | {row['second_ms']} | "
            f"{ratio:.1f} |"
        )
    write_report(args.out, report, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Instructions per validate() call, counted by valgrind's callgrind: a machine-noise-free figure.

    .venv/bin/python -m bench.validator_instructions [--calls 20] [--out reports/validator_instructions.json]

Wall-clock latency on a shared virtual machine moves by 2x from one minute to the next; the
number of instructions a call executes does not (the same total for the same code, inputs and
interpreter, whatever else the machine is doing). Runs the workload of bench/validator_perf.py
(10 cited sentences x 20 IPC chunks, evidence analyses warm) under callgrind twice, with one
call and with 1 + ``--calls`` calls, and reports the difference per call. Comparing two
revisions: run this in each checkout. Needs ``valgrind`` (Debian package); without it, it says
so and exits 2. Writes reports/validator_instructions.{json,md}.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from bench.loadgen import command_line, machine_context, write_report

ROOT: Final = Path(__file__).resolve().parents[1]
REPORTS: Final = ROOT / "reports"
_COLLECTED_RE = re.compile(r"Collected : ([0-9]+)")


def _child(calls: int) -> None:
    """The measured process: warm up once, then ``calls`` more validations."""
    from bench.validator_perf import workload
    from services.common.validation import Verdict
    from services.validator.engine import validate

    answer, chunks = workload()
    for _ in range(1 + calls):
        report = validate(answer, chunks)
    if report.verdict is not Verdict.GROUNDED:
        raise SystemExit(f"the benchmark answer should be grounded, got {report.reason.value}")


def _instructions(valgrind: str, calls: int) -> int:
    command = [
        valgrind,
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        "-m",
        "bench.validator_instructions",
        "--child",
        str(calls),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    found = _COLLECTED_RE.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=20, help="validations counted (after one)")
    parser.add_argument("--out", type=Path, default=REPORTS / "validator_instructions.json")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        _child(args.child)
        return 0
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("valgrind is not installed (apt-get install valgrind); nothing measured")
        return 2
    base = _instructions(valgrind, 0)
    total = _instructions(valgrind, args.calls)
    per_call = (total - base) / args.calls
    report: dict[str, Any] = {
        "command": command_line("bench.validator_instructions", argv),
        "machine": machine_context(),
        "calls": args.calls,
        "instructions_start_and_one_call": base,
        "instructions_with_more_calls": total,
        "instructions_per_call": round(per_call),
    }
    markdown = "\n".join(
        [
            "# Validator instructions per call",
            "",
            f"Command: `{report['command']}`  ",
            f"git {report['machine']['git_revision']}",
            "",
            f"validate() on 10 sentences x 20 IPC chunks (evidence warm): **{per_call / 1e6:.2f} M "
            f"instructions per call** (callgrind; {args.calls} calls after a warm-up call).",
        ]
    )
    write_report(args.out, report, markdown + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

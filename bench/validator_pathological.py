"""The validator's cheap tiers on pathological answers: each shape at the 64 KiB answer limit.

    .venv/bin/python -m bench.validator_pathological [--repeat 3]

Every rule of the cheap tiers must be linear in the answer's length: a quadratic one lets one
request hold a core for seconds (a security audit measured 27 s for "no no no ..." and 25 s
for "1.1.1..." before they were bounded; a review found three of the UNSAFE_TEXT rule's first
patterns at 4-5 s). Each shape is validated in-process without the model against one passage,
``--repeat`` times; the report gives the slowest time per shape, the verdict, and the size of
the details (which a quadratic detail would blow up). Writes reports/validator_pathological.
{json,md}. No assertion: read the table (a linear shape takes well under a second here).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from bench.loadgen import command_line, machine_context, write_report
from services.common.evidence import MAX_ANSWER_BYTES, Chunk
from services.validator.engine import validate

ROOT: Final = Path(__file__).resolve().parents[1]
EVIDENCE: Final = [
    Chunk(
        semantic_id="X_0",
        doc_id="X",
        text="Whoever commits theft shall be punished with imprisonment for seven years, or "
        "with fine, or with both. It is not an offence.",
    )
]
N: Final = MAX_ANSWER_BYTES


def shapes() -> dict[str, str]:
    """Repeated patterns that once made (or could make) a rule scan to the end from each
    occurrence, each cut to the answer limit."""
    raw = {
        "no no no": "no " * (N // 3),
        "not not not": "not " * (N // 4),
        "no theft, cited": "no theft [X_0] " * (N // 15),
        "1.1.1.": "1." * (N // 2),
        "1 1 1": "1 " * (N // 2),
        "numbers 0..n": " ".join(str(i) for i in range(N // 6)) + " [X_0].",
        "one hundred": "one hundred " * (N // 12),
        "cited sentences": "Theft is punished [X_0]. " * (N // 25),
        "bullets": "- theft [X_0]\n" * (N // 14),
        "numbered items": "1. a\n" * (N // 5),
        "brackets [": "[" * N,
        "citations": "[X_0] " * (N // 6),
        "ids": " ".join(f"[X_{i}]" for i in range(N // 8)),
        "parentheses (": "(" * N,
        "html comments <!--": "<!--" * (N // 4),
        "tags <a ": "<a " * (N // 3),
        "markdown images ![": "![" * (N // 2),
        "markdown openers ](": "](" * (N // 2),
        "markdown links": "[a](/x) " * (N // 8),
        "character references &#": "&#" * (N // 2),
        "joiners": "a\u200d" * (N // 4),
        "links": "http://a.b " * (N // 11),
        "e-mail @": "a@b.c " * (N // 6),
        "dates": "1 January 2000 " * (N // 15),
        "ranges": "1 to 2 " * (N // 7),
        "words": " ".join(f"w{i}" for i in range(N // 7)) + " [X_0].",
        "letters": "a" * N,
        "dots": "." * N,
        "line breaks": "\n" * (N - 8) + "x [X_0].",
        "headings #": "# a\n" * (N // 4),
        "Devanagari digits": "१" * (N // 3),
        "CJK full stops": "。" * (N // 3),
    }
    return {k: v.encode()[:N].decode(errors="ignore") for k, v in raw.items()}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    for name, answer in shapes().items():
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            report = validate(answer, EVIDENCE)
            times.append(time.perf_counter() - started)
        detail = len(report.detail) + sum(len(s.detail) for s in report.sentences)
        rows.append(
            {
                "shape": name,
                "bytes": len(answer.encode()),
                "slowest_s": round(max(times), 3),
                "reason": report.reason.value,
                "detail_chars": detail,
            }
        )
    context = machine_context()
    command = command_line("bench.validator_pathological", argv)
    lines = [
        "# Validator cheap tiers on pathological 64 KiB answers",
        "",
        f"`{command}`; load {context['loadavg'][0]:.2f} on {context['cpus']} CPUs, "
        f"git {context['git_revision']}; no model; slowest of {args.repeat}.",
        "",
        "| shape | bytes | slowest (s) | reason | detail chars |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {r['shape']} | {r['bytes']:,} | {r['slowest_s']:.3f} | {r['reason']} | "
            f"{r['detail_chars']:,} |"
            for r in rows
        ),
        "",
    ]
    write_report(
        ROOT / "reports" / "validator_pathological.json",
        {"command": command, "context": context, "rows": rows},
        "\n".join(lines),
    )


if __name__ == "__main__":
    main()

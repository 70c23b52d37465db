"""The validator's cheap tiers on pathological requests: answers at the 64 KiB limit, and
passages at the 20,000-character limit cited by many sentences.

    .venv/bin/python -m bench.validator_pathological [--repeat 3]

Every rule of the cheap tiers must be linear in the request's length: a quadratic one lets one
request hold a core for seconds (a security audit measured 27 s for "no no no ..." and 25 s
for "1.1.1..." before they were bounded; a review found three of the UNSAFE_TEXT rule's first
patterns at 4-5 s, and the act-reference parser of rule 5b at 5.8 s for 64 KiB of "IPC 1",
17 s for a reference, 60,000 spaces and an act, and about a second per sentence citing a
20,000-character passage of references). Each answer shape is validated in-process without the
model against one passage; each evidence shape is an answer of many sentences naming an act,
citing passages whose ids name another (``IPC_1_0``), so that rule 5b reads every cited passage.
``--repeat`` times each; the report gives the slowest time per shape, the verdict, and the size
of the details (which a quadratic detail would blow up). Writes reports/validator_pathological.
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
from services.validator.limits import MAX_EVIDENCE, MAX_EVIDENCE_TEXT_CHARS

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
P: Final = MAX_EVIDENCE_TEXT_CHARS


def _filled(body: str, end: str = " [X_0].") -> str:
    """``body`` cut so that it and ``end`` (a citation of the passage, so that the number rules,
    rule 5b among them, read the sentence) fill the answer limit."""
    return body[: N - len(end)] + end


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
        # The act-reference parser (rule 5b reads the acts a cited sentence names).
        "references IPC 1, cited": _filled("IPC 1 " * (N // 6)),
        "references s 1 IPC, cited": _filled("s 1 IPC " * (N // 8)),
        "references 1 of the IPC, cited": _filled("1 of the IPC " * (N // 13)),
        "a reference, spaces, an act": _filled("section 1" + " " * N, " x IPC [X_0]."),
        "a number, spaces, an article": _filled("1" + " " * N, " x art [X_0]."),
        "opening marks, then act names": _filled("(" * (N // 2) + "Constitution x " * (N // 30)),
    }
    return {k: v.encode()[:N].decode(errors="ignore") for k, v in raw.items()}


def _passage(unit: str) -> str:
    return (unit * (P // len(unit) + 1))[:P]


def evidence_shapes() -> dict[str, tuple[str, list[Chunk]]]:
    """Passages at the text limit that once made rule 5b's parser slow, each cited by every
    sentence of an answer that names an act the passages' ids do not (the CrPC, cited to IPC
    passages): one passage cited by 200 sentences, and 200 passages (4 MB) cited together by
    5 sentences."""
    texts = {
        "passage of IPC 1": _passage("IPC 1 "),
        "passage of s 1 IPC": _passage("s 1 IPC "),
        "passage of 1 of the IPC": _passage("1 of the IPC "),
        "passage of a reference, spaces, an act": "section 1" + " " * (P - 14) + "x IPC",
        "passage of a number, spaces, an article": "1" + " " * (P - 6) + "x art",
    }
    one = "Under the CrPC, section 1 applies [IPC_1_0]. "
    every = "Under the CrPC, section 1 applies [1-200]. "
    shapes: dict[str, tuple[str, list[Chunk]]] = {}
    for name, text in texts.items():
        shapes[f"{name}, cited by 200 sentences"] = (
            (one * 200).strip(),
            [Chunk(semantic_id="IPC_1_0", doc_id="IPC_1", text=text)],
        )
    for name in ("passage of IPC 1", "passage of a reference, spaces, an act"):
        shapes[f"200 passages of {name.removeprefix('passage of ')}, cited by 5 sentences"] = (
            (every * 5).strip(),
            [
                Chunk(semantic_id=f"IPC_{i}_0", doc_id=f"IPC_{i}", text=texts[name])
                for i in range(1, MAX_EVIDENCE + 1)
            ],
        )
    return shapes


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    cases = {name: (answer, EVIDENCE) for name, answer in shapes().items()}
    cases.update(evidence_shapes())
    rows = []
    for name, (answer, evidence) in cases.items():
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            report = validate(answer, evidence)
            times.append(time.perf_counter() - started)
        detail = len(report.detail) + sum(len(s.detail) for s in report.sentences)
        rows.append(
            {
                "shape": name,
                "bytes": len(answer.encode()),
                "evidence_chars": sum(len(c.text) for c in evidence),
                "slowest_s": round(max(times), 3),
                "reason": report.reason.value,
                "detail_chars": detail,
            }
        )
    context = machine_context()
    command = command_line("bench.validator_pathological", argv)
    lines = [
        "# Validator cheap tiers on pathological answers and passages",
        "",
        f"`{command}`; load {context['loadavg'][0]:.2f} on {context['cpus']} CPUs, "
        f"git {context['git_revision']}; no model; slowest of {args.repeat}.",
        "",
        "| shape | answer bytes | evidence chars | slowest (s) | reason | detail chars |",
        "| --- | --- | --- | --- | --- | --- |",
        *(
            f"| {r['shape']} | {r['bytes']:,} | {r['evidence_chars']:,} | {r['slowest_s']:.3f} "
            f"| {r['reason']} | {r['detail_chars']:,} |"
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

"""Answerability ablation: keyword rules vs the model vs both, from evaluation runs (issue 13).

    for mode in off veto rescue both model; do
      python -m evaluation --dataset all --limit 300 --no-docs --set SYNTHESIS_ANSWERABILITY=$mode
      python -m evaluation --dataset ipc --data data/golden/ipc_plain_tune_v1.jsonl --no-docs \\
          --set SYNTHESIS_ANSWERABILITY=$mode
      python -m evaluation --dataset ipc --data data/golden/ipc_plain_v1.jsonl --no-docs \\
          --set SYNTHESIS_ANSWERABILITY=$mode
    done
    python -m bench.answerability_ablation [--modes off rescue both] [--since 20261125T0558]

Reads the newest ``reports/eval/*/report.json`` per (set, mode) (no older than ``--since``,
so that runs of an earlier model are not mixed in) and writes one table with every figure
labelled tuned, never tuned or mixed by the register (``evaluation.datasets.tuning_of``).
``off`` (and ``shadow``, which answers exactly as the keyword rules do) is the keyword-rules
row. The thresholds and the default mode were chosen on the SQuAD 2.0 tune half (even crc32 of
the item id), the IPC golden set and, since v2, the plain-language IPC tune set
(``training/calibrate_answerability.py``); no answerability threshold was chosen on the SQuAD
report half, SciFact, HotpotQA or the plain-language IPC v1 set. But the keyword rules were
written looking at the first 150 SQuAD 2.0 / HotpotQA / SciFact items of both halves, HotpotQA's
comparison patterns at its comparison questions, and since 2026-11-26 HotpotQA's and SciFact's
even halves were tuned for other choices, so each split set is given by half, labelled from the
register: the report halves are **mixed**, and only the clean subsets (``evaluation.clean``) and
plain IPC v1 are **never tuned** (SciFact's clean subset with its retrieval-stage caveat). Rates
come with 95 % Wilson intervals (``evaluation.stats``, the one shared helper).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.loadgen import command_line, machine_context, write_report
from evaluation.datasets import DEFAULT_PATHS, Tuning, in_tune_half, tuning_of
from evaluation.report import newest_report
from evaluation.stats import proportion

MODES = ("off", "shadow", "veto", "rescue", "both", "model")
_PART = {"even": "tune", "odd": "report", "clean": "clean"}


def _split(label: str, dataset: str) -> tuple[tuple[str, str, str, str, str], ...]:
    """The tune half, report half and clean subset of a split set, labelled by the register."""
    tuning = tuning_of(DEFAULT_PATHS[dataset])
    return tuple(
        (
            f"{label}, {_PART[half]} {'subset' if half == 'clean' else 'half'}",
            dataset,
            dataset,
            half,
            tuning.half_label(_PART[half]),
        )
        for half in ("even", "odd", "clean")
    )


# (label, dataset folder suffix, data file in the run's description, half, tuned on?)
SETS: tuple[tuple[str, str, str, str, str], ...] = (
    *_split("SQuAD 2.0", "squad2"),
    ("IPC golden v1", "ipc", "ipc_golden_v1", "all", "tuned (rules and thresholds)"),
    ("IPC plain tune set v1", "ipc", "ipc_plain_tune_v1", "all", "tuned (thresholds, mode)"),
    (
        "IPC plain v1",
        "ipc",
        "ipc_plain_v1",
        "all",
        "never tuned; 38 of 206 near a training question",
    ),
    *_split("SciFact", "scifact"),
    *_split("HotpotQA", "hotpotqa"),
)


def _in_half(index: int, item: dict[str, Any], half: str, tuning: Tuning) -> bool:
    """Item ``index`` (its place in the run, which is the data file's order) is in ``half``:
    ``all``, ``even`` / ``odd`` crc32 of its id, or the register's ``clean`` subset."""
    if half == "all":
        return True
    if half == "clean":
        return tuning.in_clean(index, item["item_id"], item.get("subset", ""))
    return in_tune_half(item["item_id"]) is (half == "even")


def figures(path: Path, half: str) -> dict[str, Any]:
    """Refusal rates, gold document cited, citation recall/precision over one half's items."""
    report = json.loads(path.read_text())
    tuning = tuning_of(Path(report["run"]["data_path"]))
    items = [i for n, i in enumerate(report["items"]) if _in_half(n, i, half, tuning)]
    answerable = [i for i in items if i["answerable"]]
    unanswerable = [i for i in items if not i["answerable"]]
    with_gold = [i for i in answerable if i["gold_size"]]
    answered = [i for i in with_gold if i["status"] == "answered"]
    hits = sum(i["gold_hit"] for i in with_gold)
    return {
        "report": str(path),
        "n": len(items),
        "correct_refusal": proportion(
            sum(i["status"] == "refused" for i in unanswerable), len(unanswerable)
        ),
        "false_refusal": proportion(
            sum(i["status"] == "refused" for i in answerable), len(answerable)
        ),
        "gold_doc_cited": proportion(sum(i["cites_gold_doc"] for i in with_gold), len(with_gold)),
        "citation_recall": round(hits / sum(i["gold_size"] for i in with_gold), 4)
        if with_gold
        else None,
        "citation_precision": round(
            sum(i["n_supporting"] for i in answered) / sum(i["n_citations"] for i in answered), 4
        )
        if sum(i["n_citations"] for i in answered)
        else None,
        "effects": {
            e: sum(i.get("answerability_effect") == e for i in items) for e in ("vetoed", "rescued")
        },
        "latency_total_p50_ms": round(report["metrics"]["latency_total_p50_ms"]["value"], 1),
    }


def _rate(p: dict[str, Any]) -> str:
    if not p["n"]:
        return "–"
    low, high = p["ci95"]
    return f"{p['rate']:.3f} ({low:.2f}–{high:.2f}, n={p['n']})"


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Answerability ablation (issue 13)",
        "",
        f"Command: `{report['command']}`  ",
        f"Machine: {report['machine']}  ",
        "Rows: `off` and `shadow` = the keyword rules alone (`shadow`: the model scores, "
        "changes nothing).",
        "",
        "| set (tuned?) | mode | correct refusal | false refusal | gold doc cited | "
        "cit. recall | cit. precision | vetoed / rescued | p50 ms |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in report["rows"]:
        f = row["figures"]
        lines.append(
            f"| {row['set']} ({row['tuned']}) | {row['mode']} | {_rate(f['correct_refusal'])} "
            f"| {_rate(f['false_refusal'])} | {_rate(f['gold_doc_cited'])} "
            f"| {f['citation_recall']} | {f['citation_precision']} "
            f"| {f['effects']['vetoed']} / {f['effects']['rescued']} "
            f"| {f['latency_total_p50_ms']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports/bench/answerability.json"))
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument(
        "--since", default="", help="ignore reports whose folder name (UTC time) sorts before this"
    )
    args = parser.parse_args(argv)
    rows = []
    for label, dataset, data, half, tuned in SETS:
        for mode in args.modes:
            path = newest_report(dataset, data, f"SYNTHESIS_ANSWERABILITY={mode}")
            if path is not None and path.parent.name >= args.since:
                rows.append(
                    {
                        "set": label,
                        "tuned": tuned,
                        "mode": mode,
                        "figures": figures(path, half),
                    }
                )
    report = {
        "command": command_line("bench.answerability_ablation", argv),
        "machine": machine_context(),
        "rows": rows,
    }
    write_report(args.out, report, markdown(report))


if __name__ == "__main__":
    main()

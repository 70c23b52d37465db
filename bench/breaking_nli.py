"""The validator on Breaking NLI, an outside set of one-word-swap pairs: ``python -m
bench.breaking_nli [--data FILE] [--limit N]``.

Breaking NLI (Glockner et al., 2018; ``data/eval/breaking_nli/``, SOURCE.md there) takes SNLI
captions and replaces one word or phrase (an antonym, another number, colour, country, …), so
each hypothesis shares all but one word with its premise: the case a checker that counts shared
words is weakest at. Each pair becomes one answer, ``"<hypothesis> [BNLI_<pairID>]"``, citing one
passage whose text is the premise, and is validated with default options twice: with the model
(every tier; the shipped entailment model and thresholds, or ``--model-dir``'s) and with the
cheap tiers alone (model off). Reported for each: contradictions rejected, entailments
accepted, neutrals rejected, with Wilson's 95 % interval over pairs and one over premises
(pairs that share a premise are clustered), and the same shares per category. No reason or
case is printed or stored. The protocol, written before the first run, is in
docs/VALIDATOR.md ("An outside check: Breaking NLI"). Writes reports/breaking_nli.json with
the command that produced it.
"""

from __future__ import annotations

import argparse
import json
import lzma
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from bench.loadgen import machine_context
from bench.validator_accuracy import (
    ACCEPT,
    DATA,
    REJECT,
    REPORTS,
    Case,
    Chunk,
    load_tier,
    pct,
    run,
    share,
)
from services.common.validation import ValidationOptions
from services.validator.config import DEFAULT_MODEL_DIR

BREAKING_NLI_FILE: Final = DATA / "eval" / "breaking_nli" / "dataset.jsonl.xz"
LABELS: Final = ("contradiction", "entailment", "neutral")
# The figure each label reports: what the validator should do with such an answer.
FIGURES: Final = {
    "contradiction": "contradictions rejected",
    "entailment": "entailments accepted",
    "neutral": "neutrals rejected",
}
CONFIGURATIONS: Final = ("with_model", "cheap_tiers_alone")


def read_pairs(path: Path = BREAKING_NLI_FILE) -> list[dict[str, Any]]:
    """The set's rows as upstream writes them (``.xz`` read through lzma, anything else as text)."""
    opener: Callable[..., Any] = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    for row in rows:
        if row["gold_label"] not in LABELS:
            raise ValueError(f"pair {row['pairID']}: unknown label {row['gold_label']!r}")
    return rows


def cases(rows: Sequence[dict[str, Any]]) -> list[Case]:
    """One case a pair: the hypothesis citing a passage that holds the premise."""
    out = []
    for row in rows:
        sid = f"BNLI_{row['pairID']}"
        label = str(row["gold_label"])
        out.append(
            Case(
                "breaking_nli",
                f"bnli:{label}:{row['category']}",
                f"{str(row['sentence2']).rstrip()} [{sid}]",
                [Chunk(sid, str(row["sentence1"]))],
                ACCEPT if label == "entailment" else REJECT,
                cluster=str(row["sentence1"]),
            )
        )
    return out


def _correct(case: Case) -> bool:
    return bool(case.outcome["correct"])


def summary(done: Sequence[Case]) -> dict[str, Any]:
    """Per label: the share judged as the label asks (intervals over pairs and premises); per
    label and category: n and that share."""
    out: dict[str, Any] = {}
    for label in LABELS:
        group = [c for c in done if c.category.startswith(f"bnli:{label}:")]
        by_category: dict[str, list[Case]] = defaultdict(list)
        for case in group:
            by_category[case.category.split(":", 2)[2]].append(case)
        out[label] = {
            "figure": FIGURES[label],
            **share(group, _correct, "premise"),
            "categories": {
                name: _category(members) for name, members in sorted(by_category.items())
            },
        }
    return out


def _category(members: Sequence[Case]) -> dict[str, Any]:
    k = sum(_correct(c) for c in members)
    return {"n": len(members), "k": k, "rate": round(k / len(members), 4)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=BREAKING_NLI_FILE)
    parser.add_argument("--out", type=Path, default=REPORTS / "breaking_nli.json")
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR)
    parser.add_argument("--limit", type=int, default=0, help="the first N pairs only (smoke runs)")
    args = parser.parse_args(argv)
    rows = read_pairs(args.data)
    if args.limit > 0:
        rows = rows[: args.limit]
    if not rows:
        parser.error(f"no pairs in {args.data}")
    report: dict[str, Any] = {
        "command": "python -m bench.breaking_nli" + (" " + " ".join(argv) if argv else ""),
        "machine": machine_context(),
        "data": str(args.data),
        "pairs": len(rows),
        "premises": len({r["sentence1"] for r in rows}),
        "label": "never tuned (docs/VALIDATOR.md, 'An outside check: Breaking NLI')",
        "model_dir": str(args.model_dir),
    }
    tiers = {"with_model": load_tier("model", args.model_dir), "cheap_tiers_alone": None}
    for name in CONFIGURATIONS:
        tier = tiers[name]
        done = cases(rows)
        started = time.perf_counter()
        run(done, ValidationOptions(), tier)
        report[name] = {
            "model": tier.model.name if tier else "",
            "seconds": round(time.perf_counter() - started, 2),
            **summary(done),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"Breaking NLI ({report['pairs']} pairs over {report['premises']} premises; never tuned)")
    model = f"every tier, {report['with_model']['model']}"
    print(f"| figure | {model} | cheap tiers alone |")
    print("| --- | --- | --- |")
    for label in LABELS:
        cells = [pct(report[name][label]) for name in CONFIGURATIONS]
        print(f"| {FIGURES[label]} | {cells[0]} | {cells[1]} |")
    print("\nper category (share judged as the label asks):")
    print(f"| label | category | n | {model} | cheap tiers alone |")
    print("| --- | --- | --- | --- | --- |")
    for label in LABELS:
        with_model = report["with_model"][label]["categories"]
        cheap = report["cheap_tiers_alone"][label]["categories"]
        for category, row in with_model.items():
            print(
                f"| {label} | {category} | {row['n']} | {row['rate']:.1%} "
                f"| {cheap[category]['rate']:.1%} |"
            )
    print(f"report: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

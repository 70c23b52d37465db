"""Paired before → after tests of two stored runs on the same items: ``python -m evaluation.paired``.

    .venv/bin/python -m evaluation.paired BEFORE/report.json AFTER/report.json [--part clean]

For each 0/1 outcome an item has (refused, for the answerable items: false refusal; for the
unanswerable ones: correct refusal; a gold document cited), the exact McNemar test on the items
whose outcome changed (``evaluation.stats.mcnemar_exact``). ``--part`` keeps the items of one
part of a split set (``tune``, ``report``, ``clean``, ``clean_no_twin``, ``clean_unshared``),
fixed by the register
and, for the clean parts, the data file. Prints counts only, never an item.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evaluation.clean import clean_subset
from evaluation.datasets import in_tune_half, load_dataset, tuning_of
from evaluation.stats import McNemar, mcnemar_exact

Item = dict[str, Any]
# (name, which items, the 0/1 outcome)
OUTCOMES: tuple[tuple[str, Callable[[Item], bool], Callable[[Item], bool]], ...] = (
    ("correct refusal", lambda i: not i["answerable"], lambda i: i["status"] == "refused"),
    ("false refusal", lambda i: i["answerable"], lambda i: i["status"] == "refused"),
    (
        "cites a gold doc",
        lambda i: i["answerable"] and i["gold_size"] > 0,
        lambda i: bool(i["cites_gold_doc"]),
    ),
)


def part_ids(run: dict[str, Any], items: Sequence[Item], part: str) -> set[str]:
    """The item ids of one part of a split set (``all``: every item)."""
    ids = [i["item_id"] for i in items]
    if part == "all":
        return set(ids)
    if part in ("tune", "report"):
        return {i for i in ids if in_tune_half(i) == (part == "tune")}
    tuning = tuning_of(Path(run["data_path"]))
    dataset = load_dataset(run["dataset"], Path(run["data_path"]), limit=run["limit"])
    clean = clean_subset(tuning, dataset.items)
    if clean is None:
        raise ValueError(f"{run['data_path']}: the register gives it no clean subset")
    return set(
        {"clean": clean.ids, "clean_no_twin": clean.no_twin_ids}.get(part, clean.unshared_ids)
    )


def paired(before: Sequence[Item], after: Sequence[Item], ids: set[str]) -> dict[str, McNemar]:
    """Exact McNemar per outcome over the items in ``ids`` present in both runs."""
    first = {i["item_id"]: i for i in before if i["item_id"] in ids}
    second = {i["item_id"]: i for i in after if i["item_id"] in ids}
    if set(first) != set(second):
        raise ValueError("the two runs do not hold the same items")
    results: dict[str, McNemar] = {}
    for name, kept, outcome in OUTCOMES:
        keys = [k for k in first if kept(first[k])]
        if keys:
            results[name] = mcnemar_exact(
                [outcome(first[k]) for k in keys], [outcome(second[k]) for k in keys]
            )
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.paired", description=__doc__)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument(
        "--part",
        default="all",
        choices=("all", "tune", "report", "clean", "clean_no_twin", "clean_unshared"),
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    before, after = (json.loads(p.read_text(encoding="utf-8")) for p in (args.before, args.after))
    ids = part_ids(before["run"], before["items"], args.part)
    print(f"{args.before.parent.name} → {args.after.parent.name}, {args.part} ({len(ids)} items)")
    for name, result in paired(before["items"], after["items"], ids).items():
        print(f"  {name}: {result.describe()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

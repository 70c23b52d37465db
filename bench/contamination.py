"""Evaluation figures split by whether a question has a near-duplicate among the training
questions: how much of a set's score could come from questions the model has nearly seen.

    .venv/bin/python -m bench.contamination --data data/golden/ipc_plain_v1.jsonl \
        reports/eval/<run>/report.json [more report.json ...]

A question is *near* when it is a near-duplicate (``training.near_duplicates``: cosine >= 0.75
between all-MiniLM-L6-v2 embeddings) of any hand-written training question
(``training/sources/ipc_plain_questions_v*.jsonl``), the rule by which
``training/sources/merge_plain_questions.py`` drops training questions. For each report: false
refusal and gold-cited rate of the answerable questions, and correct refusal of the others, on
each subset. Reads no question text out; prints counts and rates only.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from training.build_data import read_jsonl
from training.near_duplicates import (
    MAX_SIMILARITY,
    TRAINING_SETS,
    embed,
    nearest_similarity,
    questions,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True, help="the evaluation set (jsonl)")
    parser.add_argument("reports", nargs="+", type=Path, help="report.json files of that set")
    args = parser.parse_args(argv)
    from services.retrieval.embedding import load_encoder

    encoder = load_encoder()
    train = embed(encoder, [q for path in TRAINING_SETS for q in questions(path)])
    items = read_jsonl(args.data)
    nearest = nearest_similarity(embed(encoder, [str(r["question"]) for r in items]), train)
    near = {str(r["id"]): bool(s >= MAX_SIMILARITY) for r, s in zip(items, nearest, strict=True)}
    print(f"{args.data}: {sum(near.values())} of {len(items)} questions near a training question")
    print(
        "| report | subset | answerable | false refusal | gold cited | unanswerable | correct refusal |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for report in args.reports:
        rows = json.loads(report.read_text())["items"]
        for flag, label in ((True, "near"), (False, "not near")):
            subset = [i for i in rows if near[i["item_id"]] is flag]
            answerable = [i for i in subset if i["answerable"]]
            other = [i for i in subset if not i["answerable"]]
            refused = sum(i["status"] != "answered" for i in answerable)
            gold = sum(bool(i["cites_gold_doc"]) for i in answerable)
            correct = sum(i["status"] != "answered" for i in other)
            print(
                f"| {report.parent.name} | {label} | {len(answerable)} "
                f"| {refused / max(len(answerable), 1):.3f} | {gold / max(len(answerable), 1):.3f} "
                f"| {len(other)} | {correct / len(other) if other else float('nan'):.3f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

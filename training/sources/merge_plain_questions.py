"""Merge part files of hand-written plain-language IPC questions into one shipped file, keeping
the training data apart from the evaluation sets.

    .venv/bin/python training/sources/merge_plain_questions.py var/qparts/part*.jsonl \
        --out training/sources/ipc_plain_questions_v2.jsonl --prefix more

Writers never open the evaluation sets, yet everyday scenarios recur ("I found a wallet on the
bus and kept the money"). So a question is dropped when its embedding (the retrieval model,
all-MiniLM-L6-v2) has cosine similarity >= ``--max-similarity`` (0.75) with any question of
an IPC evaluation set: the golden set, the plain-language tune set, the report-only
plain-language set and (since 2026-11-26) the statements set; a question written twice (same
text, case and spacing aside) is kept once. The rule is mechanical and was fixed before the
model trained on the file was measured; only the counts are printed, never the evaluation
questions. Kept rows are renumbered ``<prefix>-001``... in the order given.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from training.build_data import read_jsonl
from training.near_duplicates import (
    EVALUATION_SETS,
    MAX_SIMILARITY,
    embed,
    nearest_similarity,
    questions,
)
from training.sources.check_ipc_plain_questions import qkey


def keep(rows: Sequence[dict[str, object]], near: Sequence[bool]) -> list[dict[str, object]]:
    """The rows not ``near`` an evaluation question, each question text once (case and spacing
    aside, as the checker's ``qkey`` compares them: two writers may land on the same question),
    in the order given."""
    seen: set[str] = set()
    kept = []
    for row, drop in zip(rows, near, strict=True):
        text = qkey(str(row["question"]))
        if not drop and text not in seen:
            seen.add(text)
            kept.append(row)
    return kept


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("parts", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--max-similarity", type=float, default=MAX_SIMILARITY)
    args = parser.parse_args(argv)
    from services.retrieval.embedding import load_encoder

    encoder = load_encoder()
    rows = [row for part in args.parts for row in read_jsonl(part)]
    vectors = embed(encoder, [str(r["question"]) for r in rows])
    near = np.zeros(len(rows), dtype=bool)
    for path in EVALUATION_SETS:
        close = nearest_similarity(vectors, embed(encoder, questions(path))) >= args.max_similarity
        print(f"{path}: {int(close.sum())} of {len(rows)} questions too close")
        near |= close
    kept = keep(rows, near)
    repeated = len(rows) - int(near.sum()) - len(kept)
    if repeated:
        print(f"{repeated} repeated question(s) dropped (same text as an earlier one)")
    with args.out.open("w", encoding="utf-8") as out:
        for n, row in enumerate(kept, 1):
            out.write(
                json.dumps({**row, "id": f"{args.prefix}-{n:03d}"}, ensure_ascii=False) + "\n"
            )
    answerable = sum(bool(r["answerable"]) for r in kept)
    print(f"kept {len(kept)} of {len(rows)} ({answerable} answerable) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Held-back accuracy of a shipped model directory, overall and by source, as the service runs it.

    python -m training.heldback_accuracy [--model-dir models/entailment-minilm-l6]
        [--data training/data/entailment] [--threads 2] [--compare DIR]

Scores every held-back pair through ``services.common.cross_encoder.OnnxCrossEncoder`` (one pair
per ONNX run, as in the validator; the exporter's figure batches with padding, which moves an
int8 graph's scores slightly), so two model directories are compared exactly as they serve.

Overall accuracy comes with its Wilson 95 % interval. ``--compare DIR`` scores a second model
on the same pairs and adds the paired comparison: each model's accuracy, the difference
(compared minus ``--model-dir``) with a 95 % interval, the pairs each gets right that the
other does not, and the exact McNemar p. Two runs of one recipe that differ only in their seed
moved held-back accuracy by up to 1.4 points (model card, "v6 candidates"), so a ship rule that
compares one run's accuracy with another's needs this interval to say whether a gap is more
than noise of the pairs (it does not measure the seed's noise: that needs several runs).
"""

from __future__ import annotations

import argparse
import collections
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation.stats import mcnemar_exact, proportion
from services.common.cross_encoder import OnnxCrossEncoder
from training.train_entailment import read_pairs


def _rights(model: OnnxCrossEncoder, rows: Sequence[dict[str, Any]]) -> list[bool]:
    """Whether the model's argmax is each row's label."""
    probs = model.probabilities([(r["premise"], r["hypothesis"]) for r in rows])
    labels = model.manifest.labels
    return [labels[int(p.argmax())] == r["label"] for r, p in zip(rows, probs, strict=True)]


def _accuracy(rows: Sequence[dict[str, Any]], rights: Sequence[bool]) -> dict[str, float]:
    right: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    for row, ok in zip(rows, rights, strict=True):
        for key in ("all", f"source:{row.get('source', '?')}", f"label:{row['label']}"):
            total[key] += 1
            right[key] += int(ok)
    return {k: round(right[k] / total[k], 4) for k in sorted(total)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=Path("models/entailment-minilm-l6"))
    parser.add_argument("--data", type=Path, default=Path("training/data/entailment"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="DIR",
        help="a second model directory, scored on the same pairs and compared pair by pair",
    )
    args = parser.parse_args(argv)
    model = OnnxCrossEncoder(args.model_dir, threads=args.threads)
    other = OnnxCrossEncoder(args.compare, threads=args.threads) if args.compare else None
    rows = read_pairs(args.data / "heldback.jsonl.gz")
    # The served model refuses a pair over its window (callers window long texts); such pairs
    # (headed statute passages can be) are counted and left out, never truncated. Compared
    # models are scored on the pairs that fit both.
    windows = [(m, m.window_tokens()) for m in (model, other) if m]
    fits = [
        all(m.pair_tokens(r["premise"], r["hypothesis"]) <= w for m, w in windows) for r in rows
    ]
    skipped = len(rows) - sum(fits)
    rows = [r for r, ok in zip(rows, fits, strict=True) if ok]
    rights = _rights(model, rows)
    result: dict[str, Any] = {
        "model": model.name,
        "pairs": len(rows),
        "over_window_left_out": skipped,
        "accuracy": _accuracy(rows, rights),
        "accuracy_ci95": proportion(sum(rights), len(rights))["ci95"],
    }
    if other is not None:
        other_rights = _rights(other, rows)
        test = mcnemar_exact(rights, other_rights)
        difference, (low, high) = test.difference()
        result["compared"] = {
            "model": other.name,
            "accuracy": _accuracy(rows, other_rights),
            "accuracy_ci95": proportion(sum(other_rights), len(other_rights))["ci95"],
            "difference": round(difference, 4),
            "difference_ci95": (round(low, 4), round(high, 4)),
            "only_this_right": test.gained,
            "only_model_dir_right": test.lost,
            "mcnemar_p": round(test.p_value, 4),
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

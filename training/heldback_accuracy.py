"""Held-back accuracy of a shipped model directory, overall and by source, as the service runs it.

    python -m training.heldback_accuracy [--model-dir models/entailment-minilm-l6]
        [--data training/data/entailment] [--threads 2]

Scores every held-back pair through ``services.common.cross_encoder.OnnxCrossEncoder`` (one pair
per ONNX run, as in the validator; the exporter's figure batches with padding, which moves an
int8 graph's scores slightly), so two model directories are compared exactly as they serve.
"""

from __future__ import annotations

import argparse
import collections
import json
from collections.abc import Sequence
from pathlib import Path

from services.common.cross_encoder import OnnxCrossEncoder
from training.train_entailment import read_pairs


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=Path("models/entailment-minilm-l6"))
    parser.add_argument("--data", type=Path, default=Path("training/data/entailment"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    model = OnnxCrossEncoder(args.model_dir, threads=args.threads)
    rows = read_pairs(args.data / "heldback.jsonl.gz")
    # The served model refuses a pair over its window (callers window long texts); such pairs
    # (headed statute passages can be) are counted and left out, never truncated.
    window = model.window_tokens()
    fits = [model.pair_tokens(r["premise"], r["hypothesis"]) <= window for r in rows]
    skipped = len(rows) - sum(fits)
    rows = [r for r, ok in zip(rows, fits, strict=True) if ok]
    probs = model.probabilities([(r["premise"], r["hypothesis"]) for r in rows])
    labels = model.manifest.labels
    right: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    for row, p in zip(rows, probs, strict=True):
        for key in ("all", f"source:{row.get('source', '?')}", f"label:{row['label']}"):
            total[key] += 1
            right[key] += int(labels[int(p.argmax())] == row["label"])
    result = {
        "model": model.name,
        "pairs": len(rows),
        "over_window_left_out": skipped,
        "accuracy": {k: round(right[k] / total[k], 4) for k in sorted(total)},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

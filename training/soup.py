"""Average the weights of several fine-tuned runs into one model: a uniform "model soup".

    python -m training.soup --out var/train/soup var/train/run_a var/train/run_b var/train/run_c

Runs fine-tuned from the same starting weights (the same base and the same new head: the
trainer's ``--init-seed``) with other batch orders and dropout (``--seed``) tend to end in one
basin of the loss, where the average of their weights is often as good as or better than each
of them, at the cost of one model (Wortsman et al., 2022, "Model soups"). Only the *uniform*
soup is made: every run given, with equal weight. The greedy variant picks runs by a held-out
score, which here would be the held-back pairs that judge the result.

The same average over the snapshots of *one* run (the trainer's ``--snapshot-every``) is
checkpoint averaging along the run (tail averaging): the snapshots share everything, seed
included, so the checks below pass them as they pass runs of one start.

The runs must agree on everything but the seed of their batches: the same data and base weights
(their ``training.json`` sha256s), the same head initialisation, token types, labels and
architecture; otherwise the soup is refused, naming what differs. The output is a Hugging Face
model directory like a run's ``final`` (weights, tokenizer, ``training.json`` with a ``soup``
entry listing the runs), which ``training.export_onnx --model`` exports as any run. With
``--data`` the soup is scored on that mix's held-back pairs in fp32, as the trainer scores a run.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from training.train_entailment import accuracy_on, data_labels, read_pairs

logger = logging.getLogger("training.soup")

# What every run of a soup must share, read from its training.json (a missing key reads as None;
# the trainer records the effective head seed as init_seed, or seed when init_seed is absent).
SHARED = ("data_sha256", "base_sha256", "token_types", "layers", "max_length")


def final_dir(run: Path) -> Path:
    """A run directory's ``final`` model, or the directory itself when it is one."""
    return run / "final" if (run / "final" / "training.json").exists() else run


def head_seed(summary: dict[str, Any]) -> Any:
    """The seed the run's new head was drawn with (``--init-seed``, else ``--seed``)."""
    init = summary.get("init_seed")
    return summary.get("seed") if init is None else init


def check_runs(summaries: Sequence[dict[str, Any]], names: Sequence[str]) -> None:
    """Refuse runs that did not start from the same weights on the same data."""
    if len(summaries) < 2:
        raise SystemExit("a soup needs at least two runs")
    first = summaries[0]
    for name, summary in zip(names[1:], summaries[1:], strict=True):
        for key in SHARED:
            if summary.get(key) != first.get(key):
                raise SystemExit(
                    f"{name} differs from {names[0]} in {key}: "
                    f"{summary.get(key)!r}, not {first.get(key)!r}"
                )
        if head_seed(summary) != head_seed(first):
            raise SystemExit(
                f"{name}'s head was drawn with seed {head_seed(summary)}, {names[0]}'s with "
                f"{head_seed(first)}: a soup needs one starting point (the trainer's --init-seed)"
            )


def average(state_dicts: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of floating-point tensors (summed in float64); other tensors (the
    position ids buffer) must be equal in every run and are kept as they are."""
    keys = list(state_dicts[0])
    for i, sd in enumerate(state_dicts[1:], start=2):
        if list(sd) != keys:
            raise SystemExit(f"run {i} holds other tensors than run 1")
    out: dict[str, torch.Tensor] = {}
    for key in keys:
        tensors = [sd[key] for sd in state_dicts]
        if any(t.shape != tensors[0].shape for t in tensors):
            raise SystemExit(f"{key}: shapes differ between runs")
        if tensors[0].is_floating_point():
            mean = torch.stack([t.double() for t in tensors]).mean(0)
            out[key] = mean.to(tensors[0].dtype)
        else:
            if any(not torch.equal(t, tensors[0]) for t in tensors):
                raise SystemExit(f"{key}: a non-float tensor differs between runs")
            out[key] = tensors[0].clone()
    return out


def heldback_accuracy(model: Any, tokenizer: Any, data: Path, summary: dict[str, Any]) -> float:
    """fp32 accuracy on ``data``'s held-back pairs, fed as the runs were trained."""
    rows = read_pairs(data / "heldback.jsonl.gz")
    labels = {label: i for i, label in enumerate(data_labels(data))}
    sep = int(tokenizer.sep_token_id) if summary.get("token_types") == "segments" else None
    return accuracy_on(model, tokenizer, rows, labels, int(summary.get("max_length") or 256), sep)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="run directories (or their final/)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--data", type=Path, default=None, help="score the soup on this mix's held-back pairs"
    )
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    torch.set_num_threads(args.threads)

    dirs = [final_dir(run) for run in args.runs]
    names = [str(d) for d in dirs]
    summaries = [json.loads((d / "training.json").read_text()) for d in dirs]
    check_runs(summaries, names)
    models = [AutoModelForSequenceClassification.from_pretrained(str(d)) for d in dirs]
    configs = [m.config.to_diff_dict() for m in models]
    for name, config in zip(names[1:], configs[1:], strict=True):
        if config != configs[0]:
            raise SystemExit(f"{name}'s model config differs from {names[0]}'s")
    soup = models[0]
    soup.load_state_dict(average([m.state_dict() for m in models]))
    tokenizer = AutoTokenizer.from_pretrained(str(dirs[0]))
    args.out.mkdir(parents=True, exist_ok=True)
    soup.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)

    summary = dict(summaries[0])
    summary["soup"] = [
        {
            "run": name,
            "seed": s.get("seed"),
            "steps": s.get("steps"),
            "heldback_accuracy": s.get("heldback_accuracy"),
        }
        for name, s in zip(names, summaries, strict=True)
    ]
    summary["out"] = str(args.out)
    summary["heldback_accuracy"] = None
    if args.data is not None:
        accuracy = heldback_accuracy(soup, tokenizer, args.data, summary)
        summary["heldback_accuracy"] = accuracy
        # A run's own figure is missing only for a soup made without --data.
        runs = [s.get("heldback_accuracy") for s in summaries]
        scored = [a for a in runs if a is not None]
        logger.info(
            "soup of %d runs: held-back accuracy %.4f (runs: %s; mean %s)",
            len(dirs), accuracy,
            ", ".join("–" if a is None else f"{a:.4f}" for a in runs),
            f"{np.mean(scored):.4f}" if scored else "–",
        )  # fmt: skip
    (args.out / "training.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()

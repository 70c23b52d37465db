"""A shipped model's logits on a mix's training pairs: the soft targets of a distilled student.

    python -m training.teacher_logits [--model-dir models/entailment-minilm-l6]
        [--data training/data/entailment] [--out var/train/teacher/entailment.npz]

Each training pair is encoded exactly as ``training.train_entailment`` encodes it (the base
tokenizer, ``longest_first`` truncation at ``--max-length``) and scored by the teacher's int8
ONNX graph, as the services run it (``services.common.cross_encoder.OnnxCrossEncoder``'s session
and inputs, token types as its manifest says), in length-sorted batches. The ``.npz`` holds ``logits``
(float32, one row per training pair, in the file's order), the teacher's name and
``model.onnx`` sha256, and the training file's sha256 and row count: ``train_entailment
--teacher`` refuses a file made from other data (``check_teacher``).
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from services.common.cross_encoder import OnnxCrossEncoder, sha256
from training.train_entailment import (
    base_model_path,
    checked_data,
    encode,
    read_pairs,
    token_types,
    training_file,
)

logger = logging.getLogger("training.teacher")


def teacher_logits(
    session: Any,
    inputs: set[str],
    ids: Sequence[list[int]],
    sep_id: int | None,
    batch_size: int = 32,
) -> np.ndarray:
    """Logits of every encoded pair, rows in input order (batches sorted by length); token
    types are segment ids with ``sep_id``, zeros without (the teacher's manifest decides)."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = np.zeros((len(ids), 0), dtype=np.float32)
    for start in tqdm(range(0, len(order), batch_size), desc="teacher", unit="batch"):
        idx = order[start : start + batch_size]
        width = max(len(ids[i]) for i in idx)
        input_ids = np.zeros((len(idx), width), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        types = np.zeros_like(input_ids)
        for row, i in enumerate(idx):
            n = len(ids[i])
            input_ids[row, :n] = ids[i]
            mask[row, :n] = 1
            if sep_id is not None:
                types[row, :n] = token_types(ids[i], sep_id)
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": types}
        (logits,) = session.run(["logits"], {k: v for k, v in feeds.items() if k in inputs})
        if out.shape[1] == 0:
            out = np.zeros((len(ids), logits.shape[1]), dtype=np.float32)
        out[idx] = logits
    return out


def check_teacher(path: Path, train_sha256: str, rows: int, labels: Sequence[str]) -> np.ndarray:
    """The logits of a teacher file made from this training file, else ``SystemExit`` naming
    what differs."""
    with np.load(path) as data:
        meta = json.loads(str(data["meta"]))
        logits = np.asarray(data["logits"], dtype=np.float32)
    problems = []
    if meta["train_sha256"] != train_sha256:
        problems.append(
            f"made from training file sha256 {meta['train_sha256']}, not {train_sha256}"
        )
    if logits.shape != (rows, len(labels)):
        problems.append(f"logits of shape {logits.shape}, not ({rows}, {len(labels)})")
    if list(meta["labels"]) != list(labels):
        problems.append(f"labels {meta['labels']}, not {list(labels)}")
    if problems:
        raise SystemExit(f"{path} is not a teacher of this data: " + "; ".join(problems))
    return logits


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=Path("models/entailment-minilm-l6"))
    parser.add_argument("--data", type=Path, default=Path("training/data/entailment"))
    parser.add_argument("--out", type=Path, default=Path("var/train/teacher/entailment.npz"))
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    import onnxruntime as ort
    from transformers import AutoTokenizer

    teacher = OnnxCrossEncoder(args.model_dir)  # checks the manifest's checksums
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    session = ort.InferenceSession(
        str(args.model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    inputs = {i.name for i in session.get_inputs()}
    train_file = training_file(args.data)
    train_sha = checked_data(args.data, [train_file.name])[train_file.name]
    rows = read_pairs(train_file)
    tokenizer = AutoTokenizer.from_pretrained(str(base_model_path()))
    ids = encode(tokenizer, rows, args.max_length)
    started = time.perf_counter()
    segments = teacher.manifest.token_types == "segments"
    logits = teacher_logits(session, inputs, ids, int(tokenizer.sep_token_id) if segments else None)
    labels = list(teacher.manifest.labels)
    agree = float(
        np.mean([labels[int(k)] == r["label"] for k, r in zip(logits.argmax(1), rows, strict=True)])
    )
    meta = {
        "teacher": teacher.name,
        "teacher_model_sha256": sha256(args.model_dir / "model.onnx"),
        "train_file": train_file.name,
        "train_sha256": train_sha,
        "rows": len(rows),
        "labels": labels,
        "agreement_with_labels": round(agree, 4),
        "seconds": round(time.perf_counter() - started, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, logits=logits, meta=json.dumps(meta))
    logger.info("wrote %s: %s", args.out, json.dumps(meta))


if __name__ == "__main__":
    main()

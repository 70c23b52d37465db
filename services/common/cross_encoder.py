"""A shipped cross-encoder (int8 ONNX + Rust tokenizer), verified against its manifest on load.

Shared by every service that runs a trained pair classifier (the validator's entailment model;
any further model in ``models/``). A model directory holds ``model.onnx``, ``tokenizer.json`` and
``manifest.json`` (name, labels, window in tokens, sha256 of each file, calibration). Loading
checks every checksum before anything runs: a missing, truncated or altered file, or a graph ONNX
Runtime cannot load, is a ``ModelUnavailableError`` naming the path (and both checksums), so a
service stops rather than silently degrading. No torch: ONNX Runtime + tokenizers stay small.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from services.common.errors import ModelUnavailableError
from services.common.evidence import PASSAGE_FORMATS
from services.common.metrics import MODEL_CACHE

REQUIRED_FILES = ("model.onnx", "tokenizer.json")
# What a model is fed as ``token_type_ids``: the tokenizer's segment ids (0 for the first text,
# 1 for the second) or all zeros. The manifest says which: the trainer records what a run trained
# with (``training.train_entailment --token-types``) and the exporter writes it into the
# manifest, unless a rule chose otherwise (``--serve-token-types``: v4 and answerability v6
# trained with zeros and are served segment ids); a manifest without the key is served with
# segment ids (what every service did before the key).
TOKEN_TYPES = ("segments", "zeros")
# Every pair runs alone. The int8 graph quantises activations dynamically with one scale per
# tensor, i.e. per batch, so a pair's probabilities depended on what it was batched with: over
# 200 IPC pairs, batched vs alone differed by up to 0.28 (mean 0.02; 7 argmax flips), so one
# answer sentence's verdict could change with the other sentences of the request. One pair per
# run is batch-invariant, and on this CPU also faster (10 pairs: 62.9 ms p50 alone vs 72.8 ms
# batched, 1 thread; long pairs were already run alone for speed and memory).
#
# With ``threads`` > 1 the pairs of one call run side by side, one pair per thread, each with
# one ONNX thread: for short inputs that uses the cores better than splitting one pair's
# matrix products (5 IPC pairs of 80-110 tokens, 2 cores: 30 ms p50 side by side, 42 ms with
# 2 ONNX threads per pair, 52-55 ms on 1 thread; /tmp measurement, docs/VALIDATOR.md), and
# every pair still runs alone, so the scores are identical.


# The exporter writes a new graph's manifest with ``"calibration": {"calibrated_on": "not yet"}``
# and no thresholds; only the calibrators (training.calibrate, training.calibrate_answerability)
# replace it. A threshold asked of such a manifest is refused, so a service never runs a new
# graph with another model's thresholds (an export in place, then a failed calibration).
UNCALIBRATED = "not yet"


# Scorings of (first, second) pairs kept per model and process: a few MiB; the most a setting
# may ask for.
DEFAULT_CACHE_SIZE = 20_000
MAX_CACHE_SIZE = 10**7


class ScoreCache:
    """Each (first, second) pair's scores, as the model gave them. Every pair runs alone (above),
    so a pair's scores never depend on what it was scored with, and a pair seen before costs no
    model call. Least recently used dropped past ``size`` entries (0: no cache); thread-safe.
    Keys are 16-byte digests. Hits and misses are counted in ``grounded_model_cache_total``."""

    def __init__(self, size: int, model: str) -> None:
        self._size = size
        self._rows: OrderedDict[bytes, tuple[float, float, float]] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = MODEL_CACHE.labels(model, "hit")
        self._misses = MODEL_CACHE.labels(model, "miss")

    @staticmethod
    def key(first: str, second: str) -> bytes:
        """The pair's digest; the first text's length keeps ("a", "b c") and ("a b", "c")
        apart whatever characters either holds."""
        return hashlib.blake2b(f"{len(first)}:{first}{second}".encode(), digest_size=16).digest()

    def get(self, key: bytes) -> tuple[float, float, float] | None:
        if self._size <= 0:
            return None
        with self._lock:
            row = self._rows.get(key)
            if row is not None:
                self._rows.move_to_end(key)
        (self._hits if row is not None else self._misses).inc()
        return row

    def put(self, key: bytes, row: tuple[float, float, float]) -> None:
        if self._size <= 0:
            return
        with self._lock:
            self._rows[key] = row
            self._rows.move_to_end(key)
            while len(self._rows) > self._size:
                self._rows.popitem(last=False)


@dataclass(frozen=True, slots=True)
class ModelManifest:
    """What ``manifest.json`` promises: files and checksums, labels, window, calibration."""

    name: str
    files: dict[str, str]
    labels: tuple[str, ...]
    max_tokens: int
    calibration: dict[str, Any] = field(default_factory=dict)
    # How the model reads an evidence chunk (``services.common.evidence.passage_text``).
    passage_format: str = "text"
    # The token type ids it is fed (``TOKEN_TYPES``): as trained unless a rule chose otherwise.
    token_types: str = "segments"

    @classmethod
    def read(cls, directory: Path) -> ModelManifest:
        path = directory / "manifest.json"
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                name=str(raw["name"]),
                files={str(k): str(v) for k, v in raw["files"].items()},
                labels=tuple(str(x) for x in raw["labels"]),
                max_tokens=int(raw["max_tokens"]),
                calibration=dict(raw.get("calibration", {})),
                passage_format=str(raw.get("passage_format", "text")),
                token_types=str(raw.get("token_types", "segments")),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelUnavailableError(
                f"cannot read the model manifest {path}: {exc}", metadata={"path": str(path)}
            ) from exc

    def __post_init__(self) -> None:
        if self.passage_format not in PASSAGE_FORMATS:
            raise ModelUnavailableError(
                f"model manifest of {self.name}: unknown passage_format {self.passage_format!r} "
                f"(expected one of {', '.join(PASSAGE_FORMATS)})"
            )
        if self.token_types not in TOKEN_TYPES:
            raise ModelUnavailableError(
                f"model manifest of {self.name}: unknown token_types {self.token_types!r} "
                f"(expected one of {', '.join(TOKEN_TYPES)})"
            )

    @property
    def calibrated(self) -> bool:
        """False for a manifest the exporter wrote and no calibrator has replaced since."""
        return self.calibration.get("calibrated_on") != UNCALIBRATED

    def uncalibrated(self, missing: str) -> ModelUnavailableError:
        """The error for using a manifest marked uncalibrated, which has no ``missing``."""
        return ModelUnavailableError(
            f"model manifest of {self.name} is marked uncalibrated (calibration.calibrated_on "
            f"{UNCALIBRATED!r}: exported, never calibrated), so it has no {missing}; run "
            "python -m training.calibrate (entailment) or training.calibrate_answerability "
            "(answerability) on it, or put back the shipped model"
        )

    def threshold(self, name: str, default: float | None = None) -> float:
        """A calibrated threshold; a missing one is a broken manifest unless given a default.

        A manifest marked uncalibrated has none: asked without a default (every serving mode
        that decides with the model), it is refused; with one (shadow mode only scores, which
        is how calibration data is gathered) the default is used."""
        if not self.calibrated:
            if default is not None:
                return float(default)
            raise self.uncalibrated(repr(name))
        value = self.calibration.get(name, default)
        if value is None:
            raise ModelUnavailableError(f"model manifest of {self.name} has no {name!r}")
        return float(value)


# The pair every loaded model scores at start-up and after a request's call failed.
SELF_CHECK_PAIR = ("The sky is blue.", "The sky is blue.")


def encoders_of(*models: object) -> list[OnnxCrossEncoder]:
    """The ONNX encoders the given models run on (a model without one, or None, has none)."""
    found = (getattr(m, "encoder", None) for m in models)
    return [e for e in found if isinstance(e, OnnxCrossEncoder)]


async def still_runs(encoders: Sequence[OnnxCrossEncoder]) -> str | None:
    """After a model raised on a request: each loaded model's self-check, in a worker thread.
    None when every one still runs (the request's input broke it: fail that call, keep
    serving), else the first failure (the model stopped working: stop serving)."""
    for encoder in encoders:
        problem = await asyncio.to_thread(encoder.self_check)
        if problem is not None:
            return f"{encoder.name}: {problem}"
    return None


def require_calibrated(manifest: ModelManifest) -> None:
    """Refuse a manifest the exporter marked uncalibrated, for a caller that decides with its
    own thresholds (synthesis's statement check reads the entailment model with settings chosen
    for the shipped one, and never asks the manifest for a threshold)."""
    if not manifest.calibrated:
        raise manifest.uncalibrated("thresholds")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(directory: Path, manifest: ModelManifest) -> None:
    """Every required file exists and matches its manifest checksum."""
    for name in REQUIRED_FILES:
        if name not in manifest.files:
            raise ModelUnavailableError(f"{directory}/manifest.json lists no checksum for {name}")
    for name, expected in manifest.files.items():
        path = directory / name
        if not path.is_file():
            raise ModelUnavailableError(f"model file missing: {path}", metadata={"path": str(path)})
        actual = sha256(path)
        if actual != expected:
            raise ModelUnavailableError(
                f"model file corrupt: {path} has sha256 {actual}, the manifest says {expected}",
                metadata={"path": str(path)},
            )


class OnnxCrossEncoder:
    """Scores (first, second) text pairs; probabilities in the manifest's label order."""

    def __init__(self, directory: Path, *, threads: int = 1) -> None:
        self.directory = directory
        self.manifest = ModelManifest.read(directory)
        verify(directory, self.manifest)
        self.name = self.manifest.name
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            self._session: Any = ort.InferenceSession(
                str(directory / "model.onnx"), options, providers=["CPUExecutionProvider"]
            )
            self._tokenizer: Any = Tokenizer.from_file(str(directory / "tokenizer.json"))
        except Exception as exc:  # onnxruntime raises its own types for bad graphs
            raise ModelUnavailableError(f"cannot load the model in {directory}: {exc}") from exc
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()  # one tokenizer instance is not re-entrant
        self.threads = threads
        # Runs a call's pairs side by side (ONNX Runtime sessions take concurrent runs).
        self._pool = (
            ThreadPoolExecutor(threads, thread_name_prefix=f"onnx-{self.name}")
            if threads > 1
            else None
        )

    def window_tokens(self) -> int:
        return self.manifest.max_tokens

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans of the tokens of ``text`` (no special tokens)."""
        with self._lock:
            encoding = self._tokenizer.encode(text, add_special_tokens=False)
        return [(int(start), int(end)) for start, end in encoding.offsets]

    def pair_tokens(self, first: str, second: str) -> int:
        """The tokens of the pair as the model reads it (special tokens included): what must
        fit ``window_tokens``."""
        with self._lock:
            return len(self._tokenizer.encode(first, second).ids)

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Softmax over the labels for each pair; rows in input order."""
        out: np.ndarray = np.zeros((len(pairs), len(self.manifest.labels)), dtype=np.float64)
        if not pairs:
            return out
        with self._lock:
            encodings = self._tokenizer.encode_batch(list(pairs))
        try:
            if self._pool is not None and len(encodings) > 1:
                rows = list(self._pool.map(lambda e: self._run([e])[0], encodings))
            else:
                rows = [self._run([e])[0] for e in encodings]
            for row, probs in enumerate(rows):
                out[row] = probs
        except ModelUnavailableError:
            raise
        except Exception as exc:  # out of memory, a corrupt graph found at run time, ...
            raise ModelUnavailableError(f"the model {self.name} failed to run: {exc}") from exc
        return out

    def self_check(self) -> str | None:
        """Score ``SELF_CHECK_PAIR`` (what start-up runs): None when the model still runs, else
        what failed. Run after a request's call raised, to tell a model that stopped working
        (take the pod out of rotation) from an input that broke it (fail that call alone)."""
        try:
            self.probabilities([SELF_CHECK_PAIR])
        except Exception as exc:  # any failure is the answer, never raised
            return exc.message if isinstance(exc, ModelUnavailableError) else repr(exc)
        return None

    def _run(self, encodings: Sequence[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        if width > self.manifest.max_tokens:
            # Callers window every text to fit; a longer pair is a bug, never truncated.
            raise ModelUnavailableError(
                f"pair of {width} tokens exceeds the window {self.manifest.max_tokens}"
            )
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)  # stays zero for a model trained without token types
        segments = self.manifest.token_types == "segments"
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = 1
            if segments:
                types[row, :n] = e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        (logits,) = self._session.run(
            ["logits"], {k: v for k, v in feeds.items() if k in self._inputs}
        )
        scores: np.ndarray = np.asarray(logits, dtype=np.float64)
        scores -= scores.max(axis=1, keepdims=True)
        exp: np.ndarray = np.exp(scores)
        probs: np.ndarray = exp / exp.sum(axis=1, keepdims=True)
        return probs

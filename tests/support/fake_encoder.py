"""The one fake embedding encoder of the test suite: deterministic bag-of-words vectors.

Each stemmed token (the retrieval tokenizer's) adds 1 to a crc32 bucket, and rows are
L2-normalised, so texts that share words are near each other, as with the real model, at no
cost. ``calls`` counts ``encode`` calls (index builds and caches are tested by it). It has the
real ``Encoder``'s interface: ``name``, ``encode(texts, batch_size=, show_progress=)``.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from services.retrieval.lexical import tokenize


class HashingEncoder:
    """Deterministic bag-of-words vectors: each stemmed token adds 1 to a crc32 bucket."""

    def __init__(self, dim: int = 256, name: str = "fake-hashing") -> None:
        self.name = name
        self.dim = dim
        self.calls = 0

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False
    ) -> npt.NDArray[np.float32]:
        self.calls += 1
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                vectors[row, zlib.crc32(token.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

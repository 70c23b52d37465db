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

    def __init__(
        self, dim: int = 256, name: str = "fake-hashing", *, window_words: int | None = None
    ) -> None:
        self.name = name
        self.dim = dim
        self.calls = 0
        self.window_words = window_words  # None: every text fits
        self.encoded: list[str] = []

    def windows(self, text: str) -> list[str]:
        """Non-overlapping pieces of ``window_words`` words (the real encoder's windows are
        word pieces with overlap; this is enough to test how the windows are used)."""
        words = text.split()
        if self.window_words is None or len(words) <= self.window_words:
            return [text]
        size = self.window_words
        return [" ".join(words[i : i + size]) for i in range(0, len(words), size)]

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False
    ) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.encoded.extend(texts)
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                vectors[row, zlib.crc32(token.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

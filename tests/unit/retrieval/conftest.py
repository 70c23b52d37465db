"""Shared fixtures for retrieval unit tests: corpus paths and a tiny deterministic encoder."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

ROOT = Path(__file__).resolve().parents[3]
STATUTES = ROOT / "data" / "corpora" / "indian_law"
IPC = STATUTES / "ipc.json"


class FakeEncoder:
    """Hashes words into a small L2-normalised bag-of-words vector: fast, deterministic."""

    def __init__(self, name: str = "fake/hash-encoder", dim: int = 16) -> None:
        self.name = name
        self.dim = dim
        self.calls = 0

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False
    ) -> npt.NDArray[np.float32]:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
                out[row, h % self.dim] += 1.0 if h & 1 << 31 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm == 0:
                out[row, 0] = norm = 1.0
            out[row] /= norm
        return out


@pytest.fixture
def fake_encoder() -> FakeEncoder:
    return FakeEncoder()


@pytest.fixture
def single_faiss_thread() -> Iterator[None]:
    """OpenMP threads spin on a busy 2-core machine: tiny HNSW builds go from ms to ~1 s."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(before)

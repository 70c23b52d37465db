"""Shared fixtures for retrieval unit tests: corpus paths and a tiny deterministic encoder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_encoder import HashingEncoder

ROOT = Path(__file__).resolve().parents[3]
STATUTES = ROOT / "data" / "corpora" / "indian_law"
IPC = STATUTES / "ipc.json"


def small_encoder(name: str = "fake/hash-encoder", dim: int = 16) -> HashingEncoder:
    """The suite's one fake encoder (tests/support/fake_encoder.py), small and named."""
    return HashingEncoder(dim=dim, name=name)


@pytest.fixture
def fake_encoder() -> HashingEncoder:
    return small_encoder()


@pytest.fixture
def single_faiss_thread() -> Iterator[None]:
    """OpenMP threads spin on a busy 2-core machine: tiny HNSW builds go from ms to ~1 s."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(before)

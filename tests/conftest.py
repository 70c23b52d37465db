"""Session fixtures shared by integration and reliability tests: the model and the IPC index, once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from services.retrieval.embedding import Encoder, load_encoder
from services.retrieval.store import build_artifacts

ROOT = Path(__file__).resolve().parents[1]
IPC = ROOT / "data" / "corpora" / "indian_law" / "ipc.json"
# Kept between runs: the store reuses an index whose corpus checksum and model are unchanged.
TEST_INDEX = ROOT / "var" / "test" / "index-ipc"


@pytest.fixture(scope="session")
def encoder() -> Encoder:
    """The real embedding model, loaded once per session (only by the tests that ask for it)."""
    return load_encoder()


@pytest.fixture(scope="session")
def ipc_index(encoder: Encoder) -> Path:
    build_artifacts([IPC], TEST_INDEX, encoder, progress=False)
    return TEST_INDEX

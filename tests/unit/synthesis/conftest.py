"""Fixtures for synthesis unit tests: real IPC sentences and a loopback fake OpenAI server."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path

import pytest

from services.common.evidence import Chunk
from services.synthesis.openai_generator import OpenAIGenerator, OpenAISettings
from tests.support.fake_openai import FakeOpenAIServer

IPC_JSON = Path(__file__).resolve().parents[3] / "data" / "corpora" / "indian_law" / "ipc.json"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z“\"])")


def load_ipc_chunks() -> dict[str, Chunk]:
    """One chunk per line/sentence of every IPC section, ids ``IPC_<section>_<n>``."""
    chunks: dict[str, Chunk] = {}
    for record in json.loads(IPC_JSON.read_text(encoding="utf-8")):
        section = str(record["Section"]).strip()
        pieces = [
            " ".join(piece.split())
            for line in str(record["section_desc"]).splitlines()
            for piece in _SENTENCE_END.split(line)
            if piece.strip()
        ]
        for n, text in enumerate(pieces):
            semantic_id = f"IPC_{section}_{n}"
            chunks[semantic_id] = Chunk(
                semantic_id=semantic_id,
                doc_id=f"IPC_{section}",
                text=text,
                title=str(record["section_title"]),
                section=section,
                act="IPC",
                act_name="Indian Penal Code, 1860",
                chapter=str(record["chapter"]),
                chapter_title=str(record["chapter_title"]),
                sentence_index=n,
                url=f"https://example.test/ipc/{section}",
            )
    return chunks


@pytest.fixture(scope="session")
def ipc() -> Mapping[str, Chunk]:
    """Every sentence of the real IPC corpus, by semantic id."""
    return load_ipc_chunks()


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAIServer]:
    """A running fake OpenAI-compatible server; script it with ``fake_llm.script(...)``."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
async def llm(fake_llm: FakeOpenAIServer) -> AsyncIterator[OpenAIGenerator]:
    """The real OpenAI generator (the real ``openai`` client) talking to ``fake_llm``."""
    generator = OpenAIGenerator(
        OpenAISettings(
            base_url=fake_llm.base_url, model="fake-legal-7b", api_key="sk-x", timeout_s=5.0
        )
    )
    yield generator
    await generator.aclose()

"""Evidence for the validator tests: real IPC section texts from data/corpora/indian_law/ipc.json."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from services.common.evidence import Chunk

_IPC = Path(__file__).resolve().parents[3] / "data" / "corpora" / "indian_law" / "ipc.json"


@cache
def ipc_text(section: str) -> str:
    """The text of one IPC section, as shipped in the corpus."""
    for record in json.loads(_IPC.read_text(encoding="utf-8")):
        if str(record["Section"]) == section:
            text: str = record["section_desc"]
            return text
    raise KeyError(section)


def chunk(semantic_id: str, text: str) -> Chunk:
    return Chunk(semantic_id=semantic_id, doc_id=semantic_id.rsplit("_", 1)[0], text=text)


def ipc(section: str) -> Chunk:
    """Section ``section`` as the single chunk ``IPC_<section>_0``."""
    return chunk(f"IPC_{section}_0", ipc_text(section))


def ipc_evidence() -> list[Chunk]:
    """Sections 420 (cheating, seven years), 378 (theft defined), 379 (theft, three years)."""
    return [ipc("420"), ipc("378"), ipc("379")]

"""One definition of a near-duplicate question, shared by the training-data merge
(``training/sources/merge_plain_questions.py``) and the contamination report
(``bench.contamination``): two questions are near-duplicates when their embeddings (the
retrieval model, all-MiniLM-L6-v2, normalised vectors) have cosine similarity >= 0.75.

It also names the evaluation sets: ``EVALUATION_SETS`` (questions and statements, kept away from
training questions here) and ``CLAIM_SETS`` (the validator's claim sets); the exact check of
every set against both models' training data, by text and by IPC section, is
``training.decontamination``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from services.retrieval.embedding import Encoder
from training.build_data import read_jsonl

MAX_SIMILARITY: Final = 0.75
# The IPC evaluation sets no training question may nearly repeat (each row's ``question``; the
# statements set writes its statement there).
EVALUATION_SETS: Final = (
    Path("data/golden/ipc_golden_v1.jsonl"),
    Path("data/golden/ipc_plain_tune_v1.jsonl"),
    Path("data/golden/ipc_plain_v1.jsonl"),
    Path("data/golden/ipc_statements_v1.jsonl"),
    Path("data/golden/ipc_multipart_v1.jsonl"),
)
# The validator's hand-written claim sets (a ``claim`` and its IPC ``section`` per row), which
# ``training.decontamination`` checks against the training data by text and by section.
CLAIM_SETS: Final = (
    Path("data/eval/ipc_adversarial/pairs.jsonl"),
    Path("data/eval/ipc_paraphrase_probe/pairs.jsonl"),
    Path("data/eval/ipc_numeric_probe/pairs.jsonl"),
    Path("data/eval/ipc_role_probe/claims.jsonl"),
)
# Every hand-written plain-language training question file.
TRAINING_SETS: Final = tuple(sorted(Path("training/sources").glob("ipc_plain_questions_v*.jsonl")))


def questions(path: Path) -> list[str]:
    """The ``question`` field of every row of a JSONL file."""
    return [str(row["question"]) for row in read_jsonl(path)]


def embed(encoder: Encoder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """The texts' normalised embeddings, one row each."""
    return np.asarray(encoder.encode(list(texts)), dtype=np.float32)


def nearest_similarity(
    vectors: npt.NDArray[np.float32], others: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """For each row of ``vectors``, its highest cosine similarity with any row of ``others``."""
    return np.asarray((vectors @ others.T).max(axis=1), dtype=np.float32)

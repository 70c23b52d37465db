"""SynthesizeAnswer's limits and defaults: one definition, cited by the proto comments.

The edge (``convert.py``) rejects a request beyond them with field violations; the pipeline
checks the same numbers for callers that build a ``SynthesisRequest`` themselves; the settings
(``config.py``) take their defaults from here.
"""

from __future__ import annotations

from typing import Final

MAX_QUESTION_CHARS: Final = 2000
# A synthesis request's top_k is passed on to retrieval, whose own limit is the same 100
# (tests/unit/synthesis/test_limits.py keeps them equal).
MAX_TOP_K: Final = 100
DEFAULT_TOP_K: Final = 5
# RetrievePassages' own query limit (tests/unit/synthesis/test_limits.py keeps them equal):
# the second hop's query (question + first passage) is cut to fit it.
MAX_RETRIEVAL_QUERY_CHARS: Final = 2000
# Filter values (filters.acts, filters.doc_ids) are retrieval's to limit, each to the id length
# (services.common.documents.filter_value_violations, one rule for both services); the edge
# checks their length before passing them on, so a megabyte value is the caller's bad input here
# rather than a retrieval error too large to come back.
MAX_HISTORY_TURNS: Final = 50
MAX_TURN_CHARS: Final = 8000
# A multi-part question ("How is X punished, and how is Y punished?", ``question_parts``) is
# retrieved once per part besides once whole, and the answerability model scores every evidence
# passage against every part. No question of the evaluation sets has more than 2 parts (3,016
# questions of data/golden/*.jsonl, SQuAD 2.0, HotpotQA, SciFact and ipc_qa, counted
# 2026-11-26); one of 1,977 characters had 85, which cost 86 retrievals and 46 s of model time.
# A question of more parts is INVALID_ARGUMENT (never answered in part).
MAX_QUESTION_PARTS: Final = 8
# And parts x top_k, the (part, passage) pairs the answerability model scores, is at most twice
# what a question of one part may ask for (top_k 100): 2 parts at any top_k, 8 parts up to 25.
# Retrieval is then asked for at most (1 + parts) x max(top_k, candidate pool) passages.
MAX_PART_PASSAGES: Final = 2 * MAX_TOP_K
# Per-stage time limits; a call gets min(the caller's remaining deadline, the limit).
RETRIEVAL_TIMEOUT_S: Final = 5.0
VALIDATION_TIMEOUT_S: Final = 5.0
GENERATION_TIMEOUT_S: Final = 30.0

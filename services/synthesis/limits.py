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
MAX_HISTORY_TURNS: Final = 50
MAX_TURN_CHARS: Final = 8000
# Per-stage time limits; a call gets min(the caller's remaining deadline, the limit).
RETRIEVAL_TIMEOUT_S: Final = 5.0
VALIDATION_TIMEOUT_S: Final = 5.0
GENERATION_TIMEOUT_S: Final = 30.0

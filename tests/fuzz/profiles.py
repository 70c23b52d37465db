"""Hypothesis settings for the fuzz targets, chosen by FUZZ_PROFILE, and a count of inputs run.

``default`` (``make test``) runs a small sample per target so the whole suite stays fast;
``nightly`` (``make fuzz``) runs enough that all targets together see at least
``NIGHTLY_MIN_INPUTS`` generated inputs; ``tests/fuzz/conftest.py`` fails the session otherwise.
"""

from __future__ import annotations

import os
from collections import Counter

from hypothesis import HealthCheck, settings

# Every target in tests/fuzz: the nightly per-target budget is the minimum total divided by them.
TARGETS = (
    "retrieval.request_from_proto",
    "synthesis.request_from_proto",
    "validator.request_from_proto",
    "validator.engine",
    "documents.doc_id",
    "documents.list",
)
NIGHTLY_MIN_INPUTS = 100_000
# Generated inputs per target: a few hundred keep tests/fuzz to seconds in `make test`.
_EXAMPLES = {"default": 150, "nightly": NIGHTLY_MIN_INPUTS // len(TARGETS) + 500}

PROFILE = os.environ.get("FUZZ_PROFILE", "default")
if PROFILE not in _EXAMPLES:
    raise RuntimeError(f"FUZZ_PROFILE must be one of {sorted(_EXAMPLES)}, got {PROFILE!r}")

FUZZ = settings(
    max_examples=_EXAMPLES[PROFILE],
    # Timing belongs in benchmarks: a slow example on a busy 2-core machine is not a failure.
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
    print_blob=True,
)

# pytest-timeout's 300 s suits one default target; a nightly target may run ~10 min on 2 busy cores.
TIMEOUT_S = {"default": 300, "nightly": 3600}[PROFILE]

# Inputs each target actually ran (the test bodies count themselves), reported at session end.
INPUTS: Counter[str] = Counter()

"""The validator's memo caches are bounded by size, not by entry count (audit MEDIUM-3: with
``lru_cache(maxsize=8192)`` keyed by whole evidence texts, each request of 200 passages of
20,000 characters kept ~140 MB, and four such requests passed the pod's 512Mi limit)."""

from __future__ import annotations

import gc
import random
import tracemalloc
from collections.abc import Iterator

import pytest

from services.common.evidence import Chunk
from services.common.memo import MAX_TEXT_CHARS, MAX_TOTAL_CHARS
from services.validator import coverage, engine, entailment, roles
from services.validator.engine import validate
from tests.unit.validator.samples import chunk

MEMOS = {
    "engine._folded": engine._folded,
    "engine._unreadable": engine._unreadable,
    "engine._evidence_penalties": engine._evidence_penalties,
    "coverage.analyse_evidence": coverage.analyse_evidence,
    "entailment._content_terms": entailment._content_terms,
    "roles.statute_roles": roles.statute_roles,
}
WORDS = [
    "whoever",
    "commits",
    "theft",
    "shall",
    "be",
    "punished",
    "with",
    "imprisonment",
    "of",
    "either",
    "description",
    "for",
    "a",
    "term",
    "which",
    "may",
    "extend",
    "to",
    "three",
    "years",
    "or",
    "with",
    "fine",
]


def passages(request: int, count: int, size: int) -> list[Chunk]:
    rng = random.Random(request)
    return [
        chunk(
            f"P_{request}_{i}",
            (f"Passage {request}-{i}. " + " ".join(rng.choices(WORDS, k=size // 4)))[:size],
        )
        for i in range(count)
    ]


def ask(request: int, count: int, size: int) -> None:
    validate(
        f"Whoever commits theft shall be punished [P_{request}_0].", passages(request, count, size)
    )


@pytest.fixture(autouse=True)
def cold() -> Iterator[None]:
    engine.clear_caches()
    yield
    engine.clear_caches()


def test_every_memo_is_bounded_by_size() -> None:
    for name, memo in MEMOS.items():
        info = memo.cache_info()
        assert hasattr(info, "chars"), f"{name} is not a text_memo"


def test_maximal_passages_are_not_kept() -> None:
    for request in range(3):
        ask(request, 20, 20_000)
    for name, memo in MEMOS.items():
        info = memo.cache_info()
        assert info.entries <= 3, f"{name}: {info}"  # the answers' sentences, not the passages


def test_repeated_maximal_requests_keep_memory_bounded() -> None:
    gc.collect()
    tracemalloc.start()
    try:
        ask(0, 8, 20_000)
        gc.collect()
        first = tracemalloc.get_traced_memory()[0]
        for request in range(1, 3):
            ask(request, 8, 20_000)
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - first
    finally:
        tracemalloc.stop()
    # Before: ~5.6 MB kept per request of 8 such passages (140 MB per 200).
    assert growth < 1 * 2**20


def test_passages_under_the_cap_stay_within_the_budget() -> None:
    size = MAX_TEXT_CHARS - 96
    count = MAX_TOTAL_CHARS // size + 20  # more than one budget's worth
    validate("Whoever commits theft shall be punished [P_0_0].", passages(0, count, size))
    for name, memo in MEMOS.items():
        assert memo.cache_info().chars <= MAX_TOTAL_CHARS, name
    assert coverage.analyse_evidence.cache_info().entries < count


def test_clear_caches_empties_every_memo() -> None:
    ask(0, 5, 300)
    assert coverage.analyse_evidence.cache_info().entries
    engine.clear_caches()
    assert all(memo.cache_info().entries == 0 for memo in MEMOS.values())

"""text_memo: memoisation bounded by the characters of its arguments (audit MEDIUM-3)."""

from __future__ import annotations

import threading

import pytest

from services.common.memo import ENTRY_OVERHEAD_CHARS, Memoised, text_memo


def counting(
    max_text_chars: int = 100, max_total_chars: int = 1_000
) -> tuple[Memoised[str], list[str]]:
    calls: list[str] = []

    @text_memo(max_text_chars, max_total_chars)
    def upper(text: str) -> str:
        calls.append(text)
        return text.upper()

    return upper, calls


def test_a_repeated_text_is_computed_once() -> None:
    upper, calls = counting()
    assert upper("theft") == upper("theft") == "THEFT"
    assert calls == ["theft"]
    info = upper.cache_info()
    assert (info.misses, info.entries, info.chars) == (1, 1, 5 + ENTRY_OVERHEAD_CHARS)


def test_a_text_over_the_cap_is_computed_each_time_and_never_kept() -> None:
    upper, calls = counting(max_text_chars=10)
    long = "x" * 11
    assert upper(long) == upper(long) == long.upper()
    assert calls == [long, long]
    info = upper.cache_info()
    assert (info.skipped, info.entries, info.chars) == (2, 0, 0)


def test_the_arguments_together_count_against_the_cap() -> None:
    @text_memo(10, 1_000)
    def joined(a: str, b: str) -> str:
        return a + b

    joined("x" * 6, "y" * 6)
    assert joined.cache_info().entries == 0


def test_the_budget_evicts_the_least_recently_used() -> None:
    upper, calls = counting(max_text_chars=100, max_total_chars=3 * (100 + ENTRY_OVERHEAD_CHARS))
    texts = [str(n) * 100 for n in range(5)]
    for text in texts[:3]:
        upper(text)
    upper(texts[0])  # used again: now the most recent
    upper(texts[3])  # evicts texts[1], the least recently used
    calls.clear()
    upper(texts[0])
    upper(texts[2])
    assert calls == []
    upper(texts[1])
    assert calls == [texts[1]]
    info = upper.cache_info()
    assert info.entries == 3 and info.chars <= 3 * (100 + ENTRY_OVERHEAD_CHARS)


def test_many_distinct_texts_stay_within_the_budget() -> None:
    upper, _ = counting(max_text_chars=4_096, max_total_chars=50_000)
    for n in range(2_000):
        upper(f"{n} " + "y" * 4_000)
        assert upper.cache_info().chars <= 50_000
    assert upper.cache_info().entries == 50_000 // (4_000 + 6 + ENTRY_OVERHEAD_CHARS)


def test_cache_clear_forgets_everything() -> None:
    upper, calls = counting()
    upper("a")
    upper.cache_clear()
    upper("a")
    assert calls == ["a", "a"]
    assert upper.cache_info().entries == 1


def test_a_budget_that_cannot_hold_one_entry_is_refused() -> None:
    with pytest.raises(ValueError, match="max_total_chars"):
        text_memo(4_096, 4_096)


def test_threads_agree_on_the_accounting() -> None:
    upper, _ = counting(max_text_chars=50, max_total_chars=20 * (50 + ENTRY_OVERHEAD_CHARS))

    def work(k: int) -> None:
        for n in range(2_000):
            upper(f"{(n * 7 + k) % 60:02d}" + "z" * 48)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    info = upper.cache_info()
    assert info.entries == 20
    assert info.chars == 20 * (50 + ENTRY_OVERHEAD_CHARS)

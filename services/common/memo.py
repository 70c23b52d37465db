"""Memoisation bounded by size, for functions of texts (the validator's evidence analyses).

``functools.lru_cache(maxsize=N)`` bounds the number of entries, not their size: keyed by whole
evidence texts (up to 20,000 characters each at the validator's edge), 8,192 entries of long
passages and their analyses came to gigabytes (audit MEDIUM-3). ``text_memo`` bounds what it
keeps by the characters of its arguments instead:

- a call whose text arguments together exceed ``max_text_chars`` is not memoised at all (it is
  computed each time: long texts rarely recur, and one would evict many short ones);
- the entries kept hold at most ``max_total_chars`` characters of arguments (each entry also
  counts ``ENTRY_OVERHEAD_CHARS``, so many tiny texts are bounded too), least recently used
  evicted first.

The results are analyses of their texts, roughly proportional to them in size, so memory stays
bounded by a multiple of ``max_total_chars``. Thread-safe (the validator runs in worker threads).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar, cast

R = TypeVar("R")

# What an entry counts beyond its texts' characters (tuple, dict slot, result object).
ENTRY_OVERHEAD_CHARS: Final = 64
# Defaults: every passage of the shipped corpora (at most ~1,800 characters) is memoised, and a
# cache holds about a megabyte of argument text (the IPC index is ~0.2 M characters in all).
MAX_TEXT_CHARS: Final = 4_096
MAX_TOTAL_CHARS: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class MemoInfo:
    misses: int  # calls computed and kept
    skipped: int  # calls over max_text_chars, computed and not kept
    entries: int
    chars: int  # characters charged to the entries kept (texts + overhead)


class Memoised(Protocol[R]):
    """A function of ``str`` arguments memoised by ``text_memo``."""

    __wrapped__: Callable[..., R]

    def __call__(self, *args: str) -> R: ...

    def cache_clear(self) -> None: ...

    def cache_info(self) -> MemoInfo: ...


def text_memo(
    max_text_chars: int = MAX_TEXT_CHARS, max_total_chars: int = MAX_TOTAL_CHARS
) -> Callable[[Callable[..., R]], Memoised[R]]:
    """Decorator: memoise a function of positional ``str`` arguments within a character budget
    (see the module), least recently used evicted first; ``cache_clear`` and ``cache_info`` as
    on ``functools.lru_cache``."""
    if max_text_chars < 0 or max_total_chars < max_text_chars + ENTRY_OVERHEAD_CHARS:
        raise ValueError("max_total_chars must hold at least one entry of max_text_chars")

    def wrap(fn: Callable[..., R]) -> Memoised[R]:
        entries: OrderedDict[tuple[str, ...], tuple[R, int]] = OrderedDict()
        get, to_end = entries.get, entries.move_to_end
        lock = threading.Lock()
        counts = [0, 0, 0]  # misses, skipped, chars (chars changed under the lock only)

        def memo(*args: str) -> R:
            # The hit path takes no lock: a dict read and move_to_end are each atomic under
            # the GIL, and an entry evicted between the two is simply not moved. (A str caches
            # its hash, so looking up a long text costs no more than a short one.)
            found = get(args)
            if found is not None:
                try:  # noqa: SIM105 - suppress() is a slower context manager on the hot path
                    to_end(args)
                except KeyError:
                    pass
                return found[0]
            size = sum(map(len, args))
            if size > max_text_chars:
                counts[1] += 1  # statistics: a lost update under threads does no harm
                return fn(*args)
            value = fn(*args)
            cost = size + ENTRY_OVERHEAD_CHARS
            with lock:
                counts[0] += 1
                if args not in entries:
                    entries[args] = (value, cost)
                    counts[2] += cost
                    while counts[2] > max_total_chars:
                        _, (_, freed) = entries.popitem(last=False)
                        counts[2] -= freed
            return value

        def cache_clear() -> None:
            with lock:
                entries.clear()
                counts[:] = [0, 0, 0]

        def cache_info() -> MemoInfo:
            with lock:
                return MemoInfo(counts[0], counts[1], len(entries), counts[2])

        functools.update_wrapper(memo, fn)
        memo.cache_clear = cache_clear  # type: ignore[attr-defined]
        memo.cache_info = cache_info  # type: ignore[attr-defined]
        return cast("Memoised[R]", memo)

    return wrap

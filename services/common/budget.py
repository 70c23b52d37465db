"""How long a call to a dependency may take: the caller's deadline and the stage's own limit.

One definition for the pipeline's retrieval, validation and generation calls and for the
servicer's GetDocument, so each reports a spent deadline the same way.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from services.common.errors import DeadlineExceededError, DependencyTimeoutError

_T = TypeVar("_T")


def budget(deadline: float | None, limit_s: float, stage: str) -> float:
    """Seconds ``stage`` may take: ``min(time left, limit_s)``; none left is the caller's
    deadline spent (``DeadlineExceededError``). ``deadline`` is a ``time.monotonic()`` instant."""
    if deadline is None:
        return limit_s
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlineExceededError(f"deadline exceeded before {stage}")
    return min(remaining, limit_s)


async def bounded(
    dependency: str,
    deadline: float | None,
    limit_s: float,
    call: Callable[[float], Awaitable[_T]],
) -> _T:
    """Run ``call(budget)`` and enforce the budget even if the call hangs: past the caller's
    deadline that is ``DeadlineExceededError``, past the stage's limit
    ``DependencyTimeoutError``."""
    seconds = budget(deadline, limit_s, dependency)
    try:
        async with asyncio.timeout(seconds):
            return await call(seconds)
    except TimeoutError:
        if deadline is not None and time.monotonic() >= deadline:
            raise DeadlineExceededError(f"deadline exceeded during {dependency}") from None
        raise DependencyTimeoutError(dependency, f"no answer within {seconds:.3f}s") from None

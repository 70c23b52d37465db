"""How long a call to a dependency may take: the caller's deadline and the stage's own limit.

One definition for the pipeline's retrieval, validation and generation calls and for the
servicer's GetDocument, so each reports a spent deadline the same way; and for work a request
hands to a worker thread (the answerability model), which asyncio cannot cancel: ``in_thread``
gives it a ``Stop`` to check between model calls.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
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
    """Run ``call(budget)`` and enforce the budget even if the call hangs.

    Out of time, whose time ran out decides the error: the stage's limit, with the caller's
    deadline still running, is ``DependencyTimeoutError`` (DEPENDENCY_TIMEOUT); the caller's
    deadline is ``DeadlineExceededError`` (DEADLINE_EXCEEDED). That holds both when our own
    timer fires and when the call itself gives up (the dependency's DEADLINE_EXCEEDED, which
    its client raises as ``DependencyTimeoutError``): a dependency handed the caller's remaining
    time, because that was shorter than the limit, ran out of the caller's time, however early
    gRPC said so."""
    seconds = budget(deadline, limit_s, dependency)
    callers_time = deadline is not None and seconds < limit_s
    try:
        async with asyncio.timeout(seconds):
            return await call(seconds)
    except (TimeoutError, DependencyTimeoutError) as error:
        if callers_time or (deadline is not None and time.monotonic() >= deadline):
            raise DeadlineExceededError(f"deadline exceeded during {dependency}") from None
        if isinstance(error, DependencyTimeoutError):
            raise
        raise DependencyTimeoutError(dependency, f"no answer within {seconds:.3f}s") from None


@dataclass(frozen=True, slots=True)
class Stop:
    """When work in a worker thread must end: the caller's ``deadline`` (a ``time.monotonic()``
    instant; None = none) has passed, or ``cancelled`` is set (the awaiting task was cancelled:
    the caller went away, or its deadline ran out first on gRPC's clock). The work calls
    ``check`` between its steps; a thread cannot be interrupted, so it stops at the next one."""

    deadline: float | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)

    def check(self, stage: str) -> None:
        """Raise ``DeadlineExceededError`` if the work must end now."""
        if self.cancelled.is_set():
            raise DeadlineExceededError(f"{stage} stopped: the call was cancelled")
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise DeadlineExceededError(f"deadline exceeded during {stage}")


async def in_thread(deadline: float | None, work: Callable[[Stop], _T]) -> _T:
    """``work(stop)`` in a worker thread (``asyncio.to_thread``). Cancelling the awaiting task
    cannot stop a running thread, so ``stop.cancelled`` is set then and ``work``, checking
    ``stop`` between its steps, ends at its next check rather than running to completion for
    nobody; past ``deadline`` it ends with ``DeadlineExceededError`` by itself."""
    stop = Stop(deadline)
    try:
        return await asyncio.to_thread(work, stop)
    finally:
        stop.cancelled.set()  # a no-op once the work is done

"""Whose time ran out: the stage's limit (DEPENDENCY_TIMEOUT) or the caller's deadline
(DEADLINE_EXCEEDED), whether our timer fires or the dependency's call gives up first."""

from __future__ import annotations

import asyncio
import time

import pytest

from services.common.budget import bounded
from services.common.errors import DeadlineExceededError, DependencyTimeoutError


def _in(seconds: float) -> float:
    return time.monotonic() + seconds


async def _gives_up(seconds: float) -> None:
    """A dependency call whose own deadline (``seconds``, as gRPC's timeout=) ran out: its
    client raises DependencyTimeoutError (services/synthesis/clients.py) without waiting."""
    raise DependencyTimeoutError("retrieval", "did not answer in time")


async def _hangs(seconds: float) -> None:
    await asyncio.sleep(30)


class TestBounded:
    async def test_the_call_is_given_the_shorter_of_the_limit_and_the_time_left(self) -> None:
        given: list[float] = []

        async def note(seconds: float) -> None:
            given.append(seconds)

        await bounded("retrieval", _in(0.5), 30.0, note)
        await bounded("retrieval", _in(30.0), 0.5, note)
        await bounded("retrieval", None, 0.5, note)

        assert given[0] <= 0.5 and given[1:] == [0.5, 0.5]

    async def test_a_call_given_the_callers_time_that_gives_up_is_the_callers_deadline(
        self,
    ) -> None:
        # The dependency was asked with the caller's remaining time (shorter than the limit),
        # so its DEADLINE_EXCEEDED is the caller's deadline, even before ours has passed.
        with pytest.raises(DeadlineExceededError, match="during retrieval"):
            await bounded("retrieval", _in(5.0), 30.0, _gives_up)

    async def test_a_call_given_the_stage_limit_that_gives_up_is_a_dependency_timeout(
        self,
    ) -> None:
        with pytest.raises(DependencyTimeoutError) as caught:
            await bounded("retrieval", _in(30.0), 5.0, _gives_up)
        assert caught.value.reason == "DEPENDENCY_TIMEOUT"

    async def test_without_a_caller_deadline_a_call_that_gives_up_is_a_dependency_timeout(
        self,
    ) -> None:
        with pytest.raises(DependencyTimeoutError):
            await bounded("validator", None, 5.0, _gives_up)

    async def test_a_hanging_call_past_the_callers_deadline_is_the_callers_deadline(
        self,
    ) -> None:
        started = time.monotonic()
        with pytest.raises(DeadlineExceededError):
            await bounded("validator", _in(0.05), 30.0, _hangs)
        assert time.monotonic() - started < 1.0

    async def test_a_hanging_call_past_the_stage_limit_is_a_dependency_timeout(self) -> None:
        with pytest.raises(DependencyTimeoutError, match=r"no answer within 0\.050s"):
            await bounded("validator", _in(30.0), 0.05, _hangs)

    async def test_a_caller_deadline_already_spent_is_the_callers_deadline(self) -> None:
        with pytest.raises(DeadlineExceededError, match="before retrieval"):
            await bounded("retrieval", _in(-0.01), 30.0, _hangs)

"""Real components for integration tests: the IPC index, a private Redis, the in-process stack."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from stack.inprocess import InProcessStack, start_in_process
from tests.conftest import IPC, ROOT, TEST_INDEX
from tests.support.redis_server import RedisServer

__all__ = ["IPC", "ROOT", "TEST_INDEX", "Stack"]

# The type of the ``stack`` fixture (stack/inprocess.py), named for the tests that annotate it.
Stack = InProcessStack


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
async def stack(ipc_index: Path, redis_server: RedisServer) -> AsyncIterator[Stack]:
    running = await start_in_process(ipc_index, redis_url=redis_server.url)
    yield running
    await running.stop()

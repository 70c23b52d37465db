"""Real components for integration tests: the IPC index, a private Redis, three in-process servers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.common.server import ServiceApp
from services.retrieval import server as retrieval_server
from services.retrieval.config import RetrievalConfig
from services.synthesis import server as synthesis_server
from services.synthesis.config import SynthesisConfig
from services.validator import server as validator_server
from services.validator.config import ValidatorConfig
from tests.conftest import IPC, ROOT, TEST_INDEX
from tests.support.redis_server import RedisServer

__all__ = ["IPC", "ROOT", "TEST_INDEX", "Stack", "start_stack", "stop_stack"]


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@dataclass
class Stack:
    """Addresses of the three running services."""

    retrieval: str
    synthesis: str
    validator: str
    apps: dict[str, ServiceApp]


def _base_env(prefix: str) -> dict[str, str]:
    return {f"{prefix}PORT": "0", f"{prefix}METRICS_PORT": "0", f"{prefix}GRACE_S": "1"}


async def start_stack(
    index_dir: Path, redis_url: str = "", synthesis_env: dict[str, str] | None = None
) -> Stack:
    """Start validator, retrieval and synthesis on free loopback ports, each SERVING when returned."""
    validator = validator_server.create_app(ValidatorConfig.from_env(_base_env("VALIDATOR_")))
    await validator.start()
    retrieval = retrieval_server.create_app(
        RetrievalConfig.from_env(
            {
                **_base_env("RETRIEVAL_"),
                "RETRIEVAL_INDEX_DIR": str(index_dir),
                "RETRIEVAL_REDIS_URL": redis_url,
            }
        )
    )
    await retrieval.start()
    synthesis = synthesis_server.create_app(
        SynthesisConfig.from_env(
            {
                **_base_env("SYNTHESIS_"),
                "SYNTHESIS_RETRIEVAL_ADDR": f"127.0.0.1:{retrieval.port}",
                "SYNTHESIS_VALIDATOR_ADDR": f"127.0.0.1:{validator.port}",
                **(synthesis_env or {}),
            }
        )
    )
    await synthesis.start()
    return Stack(
        retrieval=f"127.0.0.1:{retrieval.port}",
        synthesis=f"127.0.0.1:{synthesis.port}",
        validator=f"127.0.0.1:{validator.port}",
        apps={"validator": validator, "retrieval": retrieval, "synthesis": synthesis},
    )


async def stop_stack(stack: Stack) -> None:
    for name in ("synthesis", "retrieval", "validator"):
        await stack.apps[name].stop(0)


@pytest.fixture(scope="session")
async def stack(ipc_index: Path, redis_server: RedisServer) -> AsyncIterator[Stack]:
    running = await start_stack(ipc_index, redis_server.url)
    yield running
    await stop_stack(running)

"""The three services as in-process ``ServiceApp``s on free loopback ports (tests, evaluation)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from services.common.server import ServiceApp
from services.retrieval import server as retrieval_server
from services.retrieval.config import RetrievalConfig
from services.synthesis import server as synthesis_server
from services.synthesis.config import SynthesisConfig
from services.validator import server as validator_server
from services.validator.config import ValidatorConfig
from stack.wiring import SERVICES, loopback, service_env


@dataclass(slots=True)
class InProcessStack:
    """Validator, retrieval and synthesis running on this process's event loop."""

    apps: dict[str, ServiceApp] = field(default_factory=dict)

    @property
    def validator(self) -> str:
        return loopback(self.apps["validator"].port)

    @property
    def retrieval(self) -> str:
        return loopback(self.apps["retrieval"].port)

    @property
    def synthesis(self) -> str:
        return loopback(self.apps["synthesis"].port)

    async def stop(self) -> None:
        """Stop callers first, without grace: no request is in flight. Safe to call twice."""
        for name in reversed(SERVICES):
            app = self.apps.pop(name, None)
            if app is not None:
                await app.stop(0)


async def start_in_process(
    index_dir: Path,
    *,
    redis_url: str = "",
    settings: Mapping[str, str] | None = None,
    grace_s: float = 1.0,
) -> InProcessStack:
    """Start the three real services in this process; each is SERVING when this returns.

    Ports are picked by the kernel, so a run never collides with ``make run``'s stack. Without
    ``redis_url`` the retrieval cache is off. ``settings`` are server settings, each given to the
    service its prefix names (``SYNTHESIS_ANSWERABILITY``: synthesis). Stops what it started if a
    start fails.
    """
    stack = InProcessStack()

    async def start(name: str, app: ServiceApp) -> None:
        stack.apps[name] = app
        await app.start()

    try:
        env = service_env("validator", port=0, grace_s=grace_s, settings=settings)
        await start("validator", validator_server.create_app(ValidatorConfig.from_env(env)))
        env = service_env(
            "retrieval",
            port=0,
            index_dir=index_dir,
            redis_url=redis_url,
            grace_s=grace_s,
            settings=settings,
        )
        await start("retrieval", retrieval_server.create_app(RetrievalConfig.from_env(env)))
        env = service_env(
            "synthesis",
            port=0,
            retrieval_addr=stack.retrieval,
            validator_addr=stack.validator,
            grace_s=grace_s,
            settings=settings,
        )
        await start("synthesis", synthesis_server.create_app(SynthesisConfig.from_env(env)))
    except BaseException:
        await stack.stop()
        raise
    return stack

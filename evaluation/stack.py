"""Where the harness sends its calls: a deployed stack's addresses, or three in-process servers."""

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


@dataclass(frozen=True, slots=True)
class Endpoints:
    """gRPC addresses; ``retrieval`` and ``validator`` may be empty for a deployed stack, which
    skips the figures that need them (retrieval metrics, threshold ablations)."""

    synthesis: str
    retrieval: str = ""
    validator: str = ""


@dataclass(slots=True)
class LocalStack:
    """Validator, retrieval (over ``index_dir``) and synthesis on free loopback ports."""

    endpoints: Endpoints
    apps: dict[str, ServiceApp] = field(default_factory=dict)

    async def stop(self) -> None:
        """Stop in reverse start order (callers first), without grace: no request is in flight."""
        for name in ("synthesis", "retrieval", "validator"):
            app = self.apps.pop(name, None)
            if app is not None:
                await app.stop(0)


def _server_env(prefix: str) -> dict[str, str]:
    # Port 0: the kernel picks free ports, so runs never collide with a deployed stack.
    return {f"{prefix}PORT": "0", f"{prefix}METRICS_PORT": "0", f"{prefix}GRACE_S": "1"}


async def start_local_stack(
    index_dir: Path, *, redis_url: str = "", settings: Mapping[str, str] | None = None
) -> LocalStack:
    """Start the three real services in this process; each is SERVING when this returns.

    Without ``redis_url`` the retrieval cache is off, so every query is really searched (the
    harness also switches the cache off per request). ``settings`` adds server settings by
    prefix (``SYNTHESIS_ANSWERABILITY``: synthesis). Stops what it started if a start fails.
    """
    extra = dict(settings or {})

    def env(prefix: str, **fixed: str) -> dict[str, str]:
        chosen = {k: v for k, v in extra.items() if k.startswith(prefix)}
        return {**chosen, **_server_env(prefix), **fixed}

    stack = LocalStack(Endpoints(synthesis=""))
    try:
        validator = validator_server.create_app(ValidatorConfig.from_env(env("VALIDATOR_")))
        stack.apps["validator"] = validator
        await validator.start()
        retrieval = retrieval_server.create_app(
            RetrievalConfig.from_env(
                env(
                    "RETRIEVAL_",
                    RETRIEVAL_INDEX_DIR=str(index_dir),
                    RETRIEVAL_REDIS_URL=redis_url,
                )
            )
        )
        stack.apps["retrieval"] = retrieval
        await retrieval.start()
        synthesis = synthesis_server.create_app(
            SynthesisConfig.from_env(
                env(
                    "SYNTHESIS_",
                    SYNTHESIS_RETRIEVAL_ADDR=f"127.0.0.1:{retrieval.port}",
                    SYNTHESIS_VALIDATOR_ADDR=f"127.0.0.1:{validator.port}",
                )
            )
        )
        stack.apps["synthesis"] = synthesis
        await synthesis.start()
    except BaseException:
        await stack.stop()
        raise
    stack.endpoints = Endpoints(
        synthesis=f"127.0.0.1:{synthesis.port}",
        retrieval=f"127.0.0.1:{retrieval.port}",
        validator=f"127.0.0.1:{validator.port}",
    )
    return stack

"""The three services as in-process ``ServiceApp``s on free loopback ports (tests, evaluation)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from services.common.config import RecordingEnviron, UnknownSettingError, close_names
from services.common.server import ServiceApp
from services.retrieval import server as retrieval_server
from services.retrieval.config import RetrievalConfig
from services.synthesis import server as synthesis_server
from services.synthesis.config import SynthesisConfig
from services.validator import server as validator_server
from services.validator.config import ValidatorConfig
from stack.wiring import SERVICES, SETTING_PREFIXES, loopback, service_env

# A stand-in for the downstream addresses a dry read of the configuration needs (never dialled).
_NOWHERE = "127.0.0.1:1"


def settings_read(settings: Mapping[str, str] | None = None) -> set[str]:
    """Every setting name the three services' configurations look up, given ``settings``
    (some are read only when another has a given value). Reads the configuration only: a bad
    value raises its ``SettingError`` here, as at start-up."""
    validator = RecordingEnviron(service_env("validator", port=0, grace_s=1.0, settings=settings))
    ValidatorConfig.from_env(validator)
    retrieval = RecordingEnviron(
        service_env("retrieval", port=0, index_dir=".", grace_s=1.0, settings=settings)
    )
    RetrievalConfig.from_env(retrieval)
    synthesis = RecordingEnviron(
        service_env(
            "synthesis",
            port=0,
            retrieval_addr=_NOWHERE,
            validator_addr=_NOWHERE,
            grace_s=1.0,
            settings=settings,
        )
    )
    SynthesisConfig.from_env(synthesis)
    return validator.read | retrieval.read | synthesis.read


def settable_names(settings: Mapping[str, str] | None = None) -> set[str]:
    """The server settings a caller can give, given ``settings``: the names the services look
    up under their own prefixes (not, say, ``LOG_LEVEL``, which each reads unprefixed)."""
    return {name for name in settings_read(settings) if name.startswith(SETTING_PREFIXES)}


def check_settings(settings: Mapping[str, str] | None) -> None:
    """Refuse server settings no service reads (a misspelt name would run with the default),
    naming the likely meant ones, and settings with bad values (``InvalidSettingError``)."""
    if not settings:
        return
    # Only prefixed names reach a service (service_env): LOG_LEVEL is looked up, but not taken.
    known = settable_names(settings)
    unread = sorted(set(settings) - known)
    if unread:
        hints = []
        for name in unread:
            meant = close_names(name, known)
            hints.append(f"{name} (did you mean {' or '.join(meant)}?)" if meant else name)
        raise UnknownSettingError("no service reads " + ", ".join(hints) + " in this configuration")


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
    service its prefix names (``SYNTHESIS_ANSWERABILITY``: synthesis); a setting no service reads
    raises ``UnknownSettingError`` before anything starts. Stops what it started if a start fails.
    """
    check_settings(settings)
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

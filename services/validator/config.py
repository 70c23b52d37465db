"""Validator settings, read once from VALIDATOR_* environment variables."""

from __future__ import annotations

from dataclasses import dataclass

from services.common.config import EnvReader, ServerSettings

SERVICE_NAME = "grounded.validator.v1.ValidatorService"


@dataclass(frozen=True, slots=True)
class ValidatorConfig:
    server: ServerSettings
    # Requests up to this wire size are validated on the event loop; larger ones in a worker
    # thread. A few milliseconds inline cost less than the thread hand-off and the GIL contention
    # it brings; a long validation inline would stall health checks and other calls.
    inline_max_bytes: int = 32 * 1024

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ValidatorConfig:
        env = EnvReader("VALIDATOR_", environ)
        return cls(
            server=ServerSettings.from_env(env, default_port=50053, default_metrics_port=9093),
            inline_max_bytes=env.int(
                "INLINE_MAX_BYTES", 32 * 1024, minimum=0, maximum=64 * 1024 * 1024
            ),
        )

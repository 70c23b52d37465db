"""Validator settings, read once from VALIDATOR_* environment variables."""

from __future__ import annotations

from dataclasses import dataclass

from services.common.config import EnvReader, ServerSettings

SERVICE_NAME = "grounded.validator.v1.ValidatorService"


@dataclass(frozen=True, slots=True)
class ValidatorConfig:
    server: ServerSettings

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ValidatorConfig:
        env = EnvReader("VALIDATOR_", environ)
        return cls(
            server=ServerSettings.from_env(env, default_port=50053, default_metrics_port=9093)
        )

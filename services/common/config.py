"""Environment-variable readers with validation: the only module that reads os.environ."""

from __future__ import annotations

import builtins
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Secret:
    """A secret value that never shows up in repr, str or logs."""

    _value: str

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('********')" if self._value else "Secret('')"

    __str__ = __repr__


class MissingSettingError(RuntimeError):
    """A required setting is absent: the process must not start."""


class EnvReader:
    """Reads typed settings under one prefix; an invalid value falls back to the default with a warning."""

    def __init__(self, prefix: str, environ: Mapping[str, str] | None = None) -> None:
        self.prefix = prefix
        self._env = os.environ if environ is None else environ

    def _raw(self, name: str) -> str | None:
        value = self._env.get(self.prefix + name)
        if value is None or value.strip() == "":
            return None
        return value.strip()

    def _parsed(
        self, name: str, default: T, parse: Callable[[str], T], check: Callable[[T], bool]
    ) -> T:
        raw = self._raw(name)
        if raw is None:
            return default
        try:
            value = parse(raw)
        except ValueError:
            value = None
        if value is None or not check(value):
            logger.warning(
                "invalid setting, using default",
                extra={"setting": self.prefix + name, "value": raw, "default": default},
            )
            return default
        return value

    def str(self, name: str, default: str, *, choices: tuple[str, ...] | None = None) -> str:
        return self._parsed(name, default, builtins.str, lambda v: choices is None or v in choices)

    def int(
        self,
        name: builtins.str,
        default: builtins.int,
        *,
        minimum: builtins.int | None = None,
        maximum: builtins.int | None = None,
    ) -> builtins.int:
        return self._parsed(name, default, builtins.int, lambda v: _in_range(v, minimum, maximum))

    def float(
        self,
        name: builtins.str,
        default: builtins.float,
        *,
        minimum: builtins.float | None = None,
        maximum: builtins.float | None = None,
    ) -> builtins.float:
        return self._parsed(name, default, builtins.float, lambda v: _in_range(v, minimum, maximum))

    def probability(self, name: builtins.str) -> builtins.float | None:
        """An optional threshold in [0, 1]: unset (or invalid, with a warning) gives None, which
        callers read as "keep the model's calibrated value"."""
        value = self.float(name, -1.0, minimum=0.0, maximum=1.0)
        return None if value < 0 else value

    def bool(self, name: builtins.str, default: builtins.bool) -> builtins.bool:
        return self._parsed(name, default, _parse_bool, lambda v: True)

    def secret(self, name: builtins.str) -> Secret:
        return Secret(self._raw(name) or "")

    def required(self, name: builtins.str) -> builtins.str:
        raw = self._raw(name)
        if raw is None:
            raise MissingSettingError(f"{self.prefix}{name} must be set")
        return raw


def _in_range(
    value: builtins.float, minimum: builtins.float | None, maximum: builtins.float | None
) -> builtins.bool:
    return (minimum is None or value >= minimum) and (maximum is None or value <= maximum)


def _parse_bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """Optional TLS / mutual TLS; plaintext (all paths empty) is for a trusted network only."""

    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    require_client_auth: bool = False

    @property
    def enabled(self) -> bool:
        return bool(self.cert_file and self.key_file)

    @classmethod
    def from_env(cls, env: EnvReader) -> TlsSettings:
        return cls(
            cert_file=env.str("TLS_CERT_FILE", ""),
            key_file=env.str("TLS_KEY_FILE", ""),
            ca_file=env.str("TLS_CA_FILE", ""),
            require_client_auth=env.bool("TLS_REQUIRE_CLIENT_AUTH", False),
        )


# gRPC client load-balancing policies a channel may use (services/common/channels.py).
LOAD_BALANCING = ("round_robin", "pick_first")


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Settings every gRPC server shares, read under its own prefix (e.g. RETRIEVAL_PORT)."""

    host: str
    port: int
    grace_s: float
    drain_delay_s: float
    metrics_port: int
    max_message_bytes: int
    log_level: str
    tls: TlsSettings
    # Connections older than this are closed (after a grace for calls in flight), so clients
    # re-resolve a headless Service and spread over replicas added since; 0 = never.
    max_connection_age_s: float = 0.0
    max_connection_age_grace_s: float = 30.0

    @classmethod
    def from_env(
        cls, env: EnvReader, *, default_port: int, default_metrics_port: int
    ) -> ServerSettings:
        global_env = EnvReader("", env._env)
        return cls(
            host=env.str("HOST", "127.0.0.1"),
            port=env.int("PORT", default_port, minimum=0, maximum=65535),
            grace_s=env.float("GRACE_S", 10.0, minimum=0.0, maximum=600.0),
            drain_delay_s=env.float("DRAIN_DELAY_S", 1.0, minimum=0.0, maximum=60.0),
            metrics_port=env.int("METRICS_PORT", default_metrics_port, minimum=-1, maximum=65535),
            max_message_bytes=env.int(
                "MAX_MESSAGE_BYTES", 4 * 1024 * 1024, minimum=64 * 1024, maximum=64 * 1024 * 1024
            ),
            log_level=global_env.str(
                "LOG_LEVEL", "INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR")
            ),
            tls=TlsSettings.from_env(env),
            max_connection_age_s=env.float(
                "MAX_CONNECTION_AGE_S", 0.0, minimum=0.0, maximum=7 * 24 * 3600.0
            ),
            max_connection_age_grace_s=env.float(
                "MAX_CONNECTION_AGE_GRACE_S", 30.0, minimum=0.0, maximum=3600.0
            ),
        )


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """A judge endpoint (issue 17), read under a service's prefix plus ``JUDGE_``.

    Off unless ``base_url`` is set. ``band_low``/``band_high`` bound the local score that
    counts as uncertain (None: the caller's default band). Zero per-minute budgets are
    unlimited; ``cache_url`` empty means no verdict cache.
    """

    base_url: str = ""
    model: str = ""
    api_key: Secret = Secret("")
    timeout_s: float = 10.0
    max_concurrency: int = 4
    items_per_call: int = 8
    max_items_per_request: int = 8
    max_tokens_per_request: int = 8_000
    calls_per_minute: int = 0
    tokens_per_minute: int = 0
    seconds_per_minute: float = 0.0
    logprobs: bool = False
    min_score: float = 0.5
    # "numbered" (batched, any instruction-following model) or "document-claim" (one claim per
    # call in the format checker models such as Bespoke-MiniCheck-7B are trained on).
    prompt: str = "numbered"
    band_low: float | None = None
    band_high: float | None = None
    cache_url: str = ""
    cache_ttl_s: int = 86_400

    @property
    def enabled(self) -> bool:
        return bool(self.base_url)

    @classmethod
    def from_env(cls, env: EnvReader) -> JudgeSettings:
        """Read ``<PREFIX>JUDGE_*``; a judge without a model name must not start."""
        judge = EnvReader(env.prefix + "JUDGE_", env._env)
        base_url = judge.str("BASE_URL", "")
        return cls(
            base_url=base_url,
            model=judge.required("MODEL") if base_url else "",
            api_key=judge.secret("API_KEY"),
            timeout_s=judge.float("TIMEOUT_S", 10.0, minimum=0.05, maximum=600.0),
            max_concurrency=judge.int("MAX_CONCURRENCY", 4, minimum=1, maximum=256),
            items_per_call=judge.int("ITEMS_PER_CALL", 8, minimum=1, maximum=64),
            max_items_per_request=judge.int("MAX_ITEMS_PER_REQUEST", 8, minimum=1, maximum=200),
            max_tokens_per_request=judge.int(
                "MAX_TOKENS_PER_REQUEST", 8_000, minimum=100, maximum=1_000_000
            ),
            calls_per_minute=judge.int("CALLS_PER_MINUTE", 0, minimum=0),
            tokens_per_minute=judge.int("TOKENS_PER_MINUTE", 0, minimum=0),
            seconds_per_minute=judge.float("SECONDS_PER_MINUTE", 0.0, minimum=0.0),
            logprobs=judge.bool("LOGPROBS", False),
            min_score=judge.float("MIN_SCORE", 0.5, minimum=0.0, maximum=1.0),
            prompt=judge.str("PROMPT", "numbered", choices=("numbered", "document-claim")),
            band_low=judge.probability("BAND_LOW"),
            band_high=judge.probability("BAND_HIGH"),
            cache_url=judge.str("CACHE_URL", ""),
            cache_ttl_s=judge.int("CACHE_TTL_S", 86_400, minimum=1, maximum=30 * 86_400),
        )

"""Synthesis settings, read once from SYNTHESIS_* environment variables."""

from __future__ import annotations

from dataclasses import dataclass

from services.common.config import EnvReader, Secret, ServerSettings, TlsSettings

SERVICE_NAME = "grounded.synthesis.v1.SynthesisService"
GENERATORS = ("extractive", "openai")


@dataclass(frozen=True, slots=True)
class OpenAISettings:
    base_url: str
    api_key: Secret
    model: str
    timeout_s: float
    max_tokens: int
    seed: int | None
    stream: bool


@dataclass(frozen=True, slots=True)
class SynthesisConfig:
    server: ServerSettings
    retrieval_addr: str
    validator_addr: str
    retrieval_timeout_s: float
    validator_timeout_s: float
    generator: str
    default_top_k: int
    history_turns: int
    openai: OpenAISettings
    client_tls: TlsSettings

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> SynthesisConfig:
        env = EnvReader("SYNTHESIS_", environ)
        seed = env.int("OPENAI_SEED", -1, minimum=-1)
        return cls(
            server=ServerSettings.from_env(env, default_port=50052, default_metrics_port=9092),
            retrieval_addr=env.str("RETRIEVAL_ADDR", "127.0.0.1:50051"),
            validator_addr=env.str("VALIDATOR_ADDR", "127.0.0.1:50053"),
            retrieval_timeout_s=env.float("RETRIEVAL_TIMEOUT_S", 5.0, minimum=0.01, maximum=120.0),
            validator_timeout_s=env.float("VALIDATOR_TIMEOUT_S", 5.0, minimum=0.01, maximum=120.0),
            generator=env.str("GENERATOR", "extractive", choices=GENERATORS),
            default_top_k=env.int("DEFAULT_TOP_K", 5, minimum=1, maximum=100),
            history_turns=env.int("HISTORY_TURNS", 4, minimum=0, maximum=50),
            openai=OpenAISettings(
                base_url=env.str("OPENAI_BASE_URL", "https://api.openai.com/v1"),
                api_key=env.secret("OPENAI_API_KEY"),
                model=env.str("OPENAI_MODEL", "gpt-4o-mini"),
                timeout_s=env.float("OPENAI_TIMEOUT_S", 20.0, minimum=0.1, maximum=600.0),
                max_tokens=env.int("OPENAI_MAX_TOKENS", 512, minimum=16, maximum=32_768),
                seed=None if seed < 0 else seed,
                stream=env.bool("OPENAI_STREAM", False),
            ),
            client_tls=TlsSettings.from_env(EnvReader("SYNTHESIS_CLIENT_", environ)),
        )

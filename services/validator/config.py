"""Validator settings, read once from VALIDATOR_* environment variables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from services.common.config import EnvReader, JudgeSettings, ServerSettings

SERVICE_NAME = "grounded.validator.v1.ValidatorService"
# The shipped entailment model, found from the repository root (the image copies models/ too).
DEFAULT_MODEL_DIR = Path(__file__).resolve().parents[2] / "models" / "entailment-minilm-l6"


@dataclass(frozen=True, slots=True)
class ValidatorConfig:
    server: ServerSettings
    # Requests up to this wire size are validated on the event loop; larger ones in a worker
    # thread. A few milliseconds inline cost less than the thread hand-off and the GIL contention
    # it brings; a long validation inline would stall health checks and other calls.
    inline_max_bytes: int = 32 * 1024
    # The entailment tier. Off only when an operator says so; then every response's ``tiers``
    # omits ENTAILMENT. On, a model that cannot be loaded stops the service at start-up.
    entailment: bool = True
    model_dir: Path = DEFAULT_MODEL_DIR
    model_threads: int = 1
    # Threshold overrides; None keeps the model's calibrated values from its manifest.
    entail_threshold: float | None = None
    contradiction_threshold: float | None = None
    coverage_rescue_threshold: float | None = None
    # The judge tier (VALIDATOR_JUDGE_*; off unless VALIDATOR_JUDGE_BASE_URL is set).
    judge: JudgeSettings = field(default_factory=JudgeSettings)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ValidatorConfig:
        env = EnvReader("VALIDATOR_", environ)
        return cls(
            server=ServerSettings.from_env(env, default_port=50053, default_metrics_port=9093),
            inline_max_bytes=env.int(
                "INLINE_MAX_BYTES", 32 * 1024, minimum=0, maximum=64 * 1024 * 1024
            ),
            entailment=env.bool("ENTAILMENT", True),
            model_dir=Path(env.str("ENTAILMENT_MODEL_DIR", str(DEFAULT_MODEL_DIR))),
            model_threads=env.int("MODEL_THREADS", 1, minimum=1, maximum=64),
            entail_threshold=env.probability("ENTAIL_THRESHOLD"),
            contradiction_threshold=env.probability("CONTRADICTION_THRESHOLD"),
            coverage_rescue_threshold=env.probability("COVERAGE_RESCUE_THRESHOLD"),
            judge=JudgeSettings.from_env(env),
        )

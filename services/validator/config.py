"""Validator settings, read once from VALIDATOR_* environment variables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from services.common.config import EnvReader, JudgeSettings, ServerSettings
from services.common.cross_encoder import DEFAULT_CACHE_SIZE, MAX_CACHE_SIZE
from services.common.judge_client import judge_band
from services.common.validation import Reason
from services.validator.cascade import DEFAULT_BAND, DEFAULT_REVIEW, REVIEWABLE

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
    # (premise, claim) scorings kept in process (0: none): a sentence validated alone and then in
    # its whole answer (StreamAnswer), or an answer validated again, costs no second model call.
    model_cache_size: int = DEFAULT_CACHE_SIZE
    # Threshold overrides; None keeps the model's calibrated values from its manifest.
    entail_threshold: float | None = None
    contradiction_threshold: float | None = None
    coverage_rescue_threshold: float | None = None
    contradiction_veto_threshold: float | None = None
    # The judge tier (VALIDATOR_JUDGE_*; off unless VALIDATOR_JUDGE_BASE_URL is set) and the
    # rules whose rejections it may review (VALIDATOR_JUDGE_REVIEW, reason codes).
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    judge_review: frozenset[Reason] = DEFAULT_REVIEW

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ValidatorConfig:
        env = EnvReader("VALIDATOR_", environ)
        judge = JudgeSettings.from_env(env)
        judge_band(judge, DEFAULT_BAND)  # an inverted band stops start-up here, named
        return cls(
            server=ServerSettings.from_env(env, default_port=50053, default_metrics_port=9093),
            inline_max_bytes=env.int(
                "INLINE_MAX_BYTES", 32 * 1024, minimum=0, maximum=64 * 1024 * 1024
            ),
            entailment=env.bool("ENTAILMENT", True),
            model_dir=Path(env.str("ENTAILMENT_MODEL_DIR", str(DEFAULT_MODEL_DIR))),
            model_threads=env.int("MODEL_THREADS", 1, minimum=1, maximum=64),
            model_cache_size=env.int(
                "MODEL_CACHE_SIZE", DEFAULT_CACHE_SIZE, minimum=0, maximum=MAX_CACHE_SIZE
            ),
            entail_threshold=env.probability("ENTAIL_THRESHOLD"),
            contradiction_threshold=env.probability("CONTRADICTION_THRESHOLD"),
            coverage_rescue_threshold=env.probability("COVERAGE_RESCUE_THRESHOLD"),
            contradiction_veto_threshold=env.probability("CONTRADICTION_VETO_THRESHOLD"),
            judge=judge,
            judge_review=_review(env),
        )


def _review(env: EnvReader) -> frozenset[Reason]:
    """VALIDATOR_JUDGE_REVIEW: comma-separated reason codes (of ``REVIEWABLE``), or "none"."""
    default = ",".join(sorted(r.value for r in DEFAULT_REVIEW))
    raw = env.str("JUDGE_REVIEW", default).strip()
    if raw.lower() == "none":
        return frozenset()
    names = {n.strip().upper() for n in raw.split(",") if n.strip()}
    allowed = {r.value: r for r in REVIEWABLE}
    if not names or not names <= allowed.keys():
        raise env.invalid(
            "JUDGE_REVIEW", raw, f"'none' or a comma-separated list of {', '.join(sorted(allowed))}"
        )
    return frozenset(allowed[n] for n in names)

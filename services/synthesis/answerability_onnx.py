"""Sufficiency's options from the shipped answerability model's calibration.

The model itself (loading, checksums, windowed scoring) is ``services.common.answerability_model``,
shared with retrieval's rerank.
"""

from __future__ import annotations

from services.common.answerability_model import OnnxAnswerabilityScorer
from services.common.cross_encoder import require_calibrated
from services.synthesis.answerability import (
    AnswerabilityMode,
    AnswerabilityOptions,
    StatementCheck,
)

__all__ = ["options_from_manifest"]


def options_from_manifest(
    scorer: OnnxAnswerabilityScorer,
    mode: str,
    veto_below: float | None = None,
    rescue_at: float | None = None,
    *,
    statements: StatementCheck = StatementCheck.MODEL,
    statement_veto_below: float = 0.0,
    statement_rescue_at: float = 1.0,
) -> AnswerabilityOptions:
    """Options for ``mode`` with the model's calibrated thresholds unless overridden.

    Each mode has its own calibrated thresholds (training/calibrate_answerability.py):
    ``veto_below`` and ``rescue_at`` for ``both``, ``veto_only_below`` for ``veto``,
    ``rescue_only_at`` for ``rescue``, ``model_only_threshold`` for ``model``. A manifest from
    before the per-mode keys (v1) has only the pair for ``both``, which the other two then share.
    Shadow mode only scores (it is how the thresholds are calibrated), so it needs none.

    Every other mode refuses a manifest marked uncalibrated even when both thresholds are
    given: an operator's overrides were chosen for a calibrated model, and the validator
    refuses such an entailment model whatever is set, so both services decide alike.
    """
    manifest = scorer.encoder.manifest
    chosen = AnswerabilityMode(mode)
    defaults = AnswerabilityOptions()
    shadow = chosen is AnswerabilityMode.SHADOW
    if not shadow:
        require_calibrated(manifest)
    veto_key = {
        AnswerabilityMode.MODEL: "model_only_threshold",
        AnswerabilityMode.VETO: "veto_only_below",
    }.get(chosen, "veto_below")
    rescue_key = "rescue_only_at" if chosen is AnswerabilityMode.RESCUE else "rescue_at"
    if veto_key not in manifest.calibration and veto_key != "model_only_threshold":
        veto_key = "veto_below"
    if rescue_key not in manifest.calibration:
        rescue_key = "rescue_at"
    if veto_below is None:
        veto_below = manifest.threshold(veto_key, defaults.veto_below if shadow else None)
    if rescue_at is None:
        rescue_at = manifest.threshold(rescue_key, defaults.rescue_at if shadow else None)
    return AnswerabilityOptions(
        mode=chosen,
        veto_below=veto_below,
        rescue_at=rescue_at,
        statements=statements,
        statement_veto_below=statement_veto_below,
        statement_rescue_at=statement_rescue_at,
    )

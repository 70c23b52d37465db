"""Sufficiency's options from the shipped answerability model's calibration.

The model itself (loading, checksums, windowed scoring) is ``services.common.answerability_model``,
shared with retrieval's rerank.
"""

from __future__ import annotations

from services.common.answerability_model import OnnxAnswerabilityScorer
from services.synthesis.answerability import AnswerabilityMode, AnswerabilityOptions

__all__ = ["options_from_manifest"]


def options_from_manifest(
    scorer: OnnxAnswerabilityScorer,
    mode: str,
    veto_below: float | None = None,
    rescue_at: float | None = None,
) -> AnswerabilityOptions:
    """Options for ``mode`` with the model's calibrated thresholds unless overridden.

    ``model`` mode has its own calibrated threshold (the model decides alone); the other modes
    share the pair calibrated for ``both`` (training/calibrate_answerability.py). Shadow mode
    only scores (it is how the thresholds are calibrated), so it needs none.
    """
    manifest = scorer.encoder.manifest
    chosen = AnswerabilityMode(mode)
    defaults = AnswerabilityOptions()
    shadow = chosen is AnswerabilityMode.SHADOW
    calibrated = "model_only_threshold" if chosen is AnswerabilityMode.MODEL else "veto_below"
    if veto_below is None:
        veto_below = manifest.threshold(calibrated, defaults.veto_below if shadow else None)
    if rescue_at is None:
        rescue_at = manifest.threshold("rescue_at", defaults.rescue_at if shadow else None)
    return AnswerabilityOptions(mode=chosen, veto_below=veto_below, rescue_at=rescue_at)

"""The shipped answerability model (``models/answerability-minilm-l6/``) as an AnswerabilityScorer.

Loading and checks live in ``services.common.cross_encoder`` (checksums verified before anything
runs; a missing or corrupt model stops synthesis at start-up rather than letting it fall back
to the keyword rules silently). A passage longer than the model's window is scored in
overlapping windows (``services.common.language.windows``) and keeps its best window's score:
nothing is truncated.
"""

from __future__ import annotations

from services.common.answerability_model import OnnxAnswerabilityScorer, load_scorer
from services.synthesis.answerability import AnswerabilityMode, AnswerabilityOptions

__all__ = ["OnnxAnswerabilityScorer", "load_scorer", "options_from_manifest"]


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

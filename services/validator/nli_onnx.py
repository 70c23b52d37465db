"""The validator's entailment model: the shipped NLI cross-encoder as an ``NliModel``.

Loading and checks live in ``services.common.cross_encoder`` (manifest checksums verified before
anything runs; a missing or corrupt model stops the validator rather than letting it fall back
to the lexical tiers silently). Here: the label order the tier reads, and its thresholds.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from services.common.cross_encoder import SELF_CHECK_PAIR, OnnxCrossEncoder, ScoreCache
from services.common.errors import ModelUnavailableError
from services.validator.config import ValidatorConfig
from services.validator.engine import EntailmentTier
from services.validator.entailment import Thresholds, active_veto

__all__ = ["OnnxNliModel", "load_tier", "tier_from_config"]

logger = logging.getLogger(__name__)
NLI_LABELS = ("entailment", "neutral", "contradiction")


class OnnxNliModel:
    """``entailment.NliModel`` over the shipped ONNX file; thread-safe."""

    def __init__(self, directory: Path, *, threads: int = 1, cache_size: int = 0) -> None:
        self.encoder = OnnxCrossEncoder(directory, threads=threads)
        self._cache = ScoreCache(cache_size, self.encoder.name)
        self.manifest = self.encoder.manifest
        self.name = self.encoder.name
        missing = set(NLI_LABELS) - set(self.manifest.labels)
        if missing:
            raise ModelUnavailableError(f"{directory} is not an NLI model: no {sorted(missing)}")
        self._order = [self.manifest.labels.index(x) for x in NLI_LABELS]

    def window_tokens(self) -> int:
        return self.encoder.window_tokens()

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return self.encoder.token_spans(text)

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, float, float]]:
        """(entailment, neutral, contradiction) per pair; pairs scored before come from the
        cache, with the numbers the model gave them."""
        keys = [ScoreCache.key(first, second) for first, second in pairs]
        first_at = {key: n for n, key in reversed(list(enumerate(keys)))}
        found: dict[bytes, tuple[float, float, float]] = {}
        for key in first_at:  # a pair twice in one call is looked up and scored once
            row = self._cache.get(key)
            if row is not None:
                found[key] = row
        todo = sorted(n for key, n in first_at.items() if key not in found)
        if todo:
            probs = self.encoder.probabilities([pairs[n] for n in todo])[:, self._order]
            for n, (e, neutral, c) in zip(todo, probs, strict=True):
                found[keys[n]] = (float(e), float(neutral), float(c))
                self._cache.put(keys[n], found[keys[n]])
        return [found[key] for key in keys]


def load_tier(
    directory: Path,
    *,
    threads: int = 1,
    cache_size: int = 0,
    entail: float | None = None,
    contradiction: float | None = None,
    rescue: float | None = None,
    veto: float | None = None,
) -> EntailmentTier:
    """Load, verify and smoke-run the model; thresholds default to its calibrated ones.
    ``cache_size`` 0 (the default, what the benchmarks time) scores every pair afresh."""
    model = OnnxNliModel(directory, threads=threads, cache_size=cache_size)
    model.predict([SELF_CHECK_PAIR])  # fail now, not on a request
    m = model.manifest
    calibrated_entail = m.threshold("entail_threshold")
    thresholds = Thresholds(
        entail=calibrated_entail if entail is None else entail,
        contradiction=m.threshold("contradiction_threshold")
        if contradiction is None
        else contradiction,
        rescue=m.threshold("coverage_rescue_threshold", calibrated_entail)
        if rescue is None
        else rescue,
        # Optional in a manifest (none: no veto); 1 switches it off (docs/VALIDATOR.md, "M").
        veto=active_veto(
            m.calibration.get("contradiction_veto_threshold") if veto is None else veto
        ),
    )
    logger.info(
        "entailment model loaded",
        extra={"model": model.name, "path": str(directory), "threads": threads,
               "cache_size": cache_size,
               "entail_threshold": thresholds.entail,
               "contradiction_threshold": thresholds.contradiction,
               "coverage_rescue_threshold": thresholds.rescue,
               "contradiction_veto_threshold": thresholds.veto},
    )  # fmt: skip
    return EntailmentTier(model, thresholds)


def tier_from_config(config: ValidatorConfig) -> EntailmentTier:
    """The tier as the service and the CLI configure it (``VALIDATOR_*`` settings)."""
    return load_tier(
        config.model_dir,
        threads=config.model_threads,
        cache_size=config.model_cache_size,
        entail=config.entail_threshold,
        contradiction=config.contradiction_threshold,
        rescue=config.coverage_rescue_threshold,
        veto=config.contradiction_veto_threshold,
    )

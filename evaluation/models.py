"""Which model files an evaluation measured: each trained model's manifest name and the sha256 of
its ``model.onnx``, recorded in a report's run configuration (``run.config``).

An in-process stack loads each model from the folder its setting names (``--set
SYNTHESIS_ANSWERABILITY_MODEL_DIR=...``) or the shipped one; a deployed stack's models are not
known here, and such a report names none. ``training.calibrate_answerability`` reads the
answerability model's sha256 to use only reports of the model it calibrates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from services.common.cross_encoder import sha256
from services.synthesis.config import DEFAULT_ANSWERABILITY_DIR, DEFAULT_STATEMENT_MODEL_DIR
from services.validator.config import DEFAULT_MODEL_DIR as DEFAULT_ENTAILMENT_DIR

ENTAILMENT = "entailment model (validator)"
ANSWERABILITY = "answerability model (synthesis)"
STATEMENT = "statement model (synthesis)"
# Each model an in-process stack loads: the server setting naming its folder, and the default.
SETTINGS = {
    ENTAILMENT: ("VALIDATOR_ENTAILMENT_MODEL_DIR", DEFAULT_ENTAILMENT_DIR),
    ANSWERABILITY: ("SYNTHESIS_ANSWERABILITY_MODEL_DIR", DEFAULT_ANSWERABILITY_DIR),
    STATEMENT: ("SYNTHESIS_STATEMENT_MODEL_DIR", DEFAULT_STATEMENT_MODEL_DIR),
}
SHA_SUFFIX = " model.onnx sha256"


def sha_key(model: str) -> str:
    """The run.config key holding a model's ``model.onnx`` sha256."""
    return model + SHA_SUFFIX


def models_used(server_settings: Mapping[str, str]) -> dict[str, str]:
    """``{model: "<manifest name> (<folder>)", sha_key(model): <sha256>}`` for each model."""
    found: dict[str, str] = {}
    for model, (setting, default) in SETTINGS.items():
        folder = Path(server_settings.get(setting) or default)
        try:
            name = str(json.loads((folder / "manifest.json").read_text())["name"])
            found[sha_key(model)] = sha256(folder / "model.onnx")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            found[model] = f"unreadable: {folder} ({exc})"
            continue
        found[model] = f"{name} ({folder})"
    return found

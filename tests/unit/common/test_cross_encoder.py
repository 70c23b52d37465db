"""The shared cross-encoder loader: batching by tokens, manifest reading, wrong-task models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from services.common.cross_encoder import BATCH_PAIRS, BATCH_TOKENS, ModelManifest, batches
from services.common.errors import ModelUnavailableError
from services.validator.config import DEFAULT_MODEL_DIR
from services.validator.nli_onnx import OnnxNliModel


class TestBatches:
    def test_batches_keep_padded_tokens_under_the_budget(self) -> None:
        lengths = [6] * 40 + [200] * 20
        cut = batches(list(range(60)), lengths)
        assert sorted(i for b in cut for i in b) == list(range(60))
        for batch in cut:
            assert max(lengths[i] for i in batch) * len(batch) <= BATCH_TOKENS or len(batch) == 1
            assert len(batch) <= BATCH_PAIRS

    def test_batches_give_an_overlong_pair_its_own_run(self) -> None:
        assert batches([0, 1], [10, BATCH_TOKENS + 5]) == [[0], [1]]


class TestManifest:
    def test_manifest_threshold_requires_a_calibrated_value(self) -> None:
        manifest = ModelManifest("m", {}, ("a",), 256, {"entail_threshold": 0.6})
        assert manifest.threshold("entail_threshold") == 0.6
        assert manifest.threshold("other", 0.5) == 0.5
        with pytest.raises(ModelUnavailableError, match="other"):
            manifest.threshold("other")

    def test_nli_wrapper_rejects_a_model_of_another_task(self, tmp_path: Path) -> None:
        target = tmp_path / "model"
        shutil.copytree(DEFAULT_MODEL_DIR, target)
        manifest = json.loads((target / "manifest.json").read_text())
        manifest["labels"] = ["answers", "not_answers", "other"]
        (target / "manifest.json").write_text(json.dumps(manifest))
        with pytest.raises(ModelUnavailableError, match="not an NLI model"):
            OnnxNliModel(target)

"""The shipped entailment model: integrity checks on load, and what the real model says.

These load models/entailment-minilm-l6 (int8 ONNX, ~23 MB) as make run does; a missing,
truncated or altered file must stop the load with the path and the checksums, never degrade.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import ClassVar

import pytest

from services.common.config import InvalidSettingError
from services.common.cross_encoder import DEFAULT_CACHE_SIZE, sha256
from services.common.errors import ModelUnavailableError
from services.common.validation import Reason, Tier, Verdict
from services.validator.config import DEFAULT_MODEL_DIR, ValidatorConfig
from services.validator.engine import validate
from services.validator.nli_onnx import OnnxNliModel, load_tier
from tests.support.model_calls import count_encoder_calls
from tests.unit.validator.samples import ipc


@pytest.fixture(scope="module")
def model() -> OnnxNliModel:
    return OnnxNliModel(DEFAULT_MODEL_DIR)


@pytest.fixture
def model_copy(tmp_path: Path) -> Path:
    target = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, target)
    return target


class TestIntegrity:
    def test_shipped_files_match_the_manifest(self) -> None:
        manifest = json.loads((DEFAULT_MODEL_DIR / "manifest.json").read_text())
        for name, digest in manifest["files"].items():
            assert sha256(DEFAULT_MODEL_DIR / name) == digest, name
        assert (DEFAULT_MODEL_DIR / "model.onnx").stat().st_size <= 30 * 1024 * 1024

    def test_load_rejects_a_corrupt_model_file(self, model_copy: Path) -> None:
        with (model_copy / "model.onnx").open("r+b") as handle:
            handle.seek(1000)
            handle.write(b"\x00" * 16)
        with pytest.raises(ModelUnavailableError, match=r"corrupt.*sha256"):
            OnnxNliModel(model_copy)

    def test_load_rejects_a_missing_model_file(self, model_copy: Path) -> None:
        (model_copy / "tokenizer.json").unlink()
        with pytest.raises(ModelUnavailableError, match="missing"):
            OnnxNliModel(model_copy)

    def test_load_rejects_a_missing_manifest(self, model_copy: Path) -> None:
        (model_copy / "manifest.json").unlink()
        with pytest.raises(ModelUnavailableError, match="manifest"):
            OnnxNliModel(model_copy)

    def test_load_rejects_a_file_that_is_no_model(self, model_copy: Path) -> None:
        (model_copy / "model.onnx").write_bytes(b"not an onnx graph")
        manifest = json.loads((model_copy / "manifest.json").read_text())
        manifest["files"]["model.onnx"] = sha256(model_copy / "model.onnx")
        (model_copy / "manifest.json").write_text(json.dumps(manifest))
        with pytest.raises(ModelUnavailableError, match="cannot load"):
            OnnxNliModel(model_copy)


class TestRealModel:
    def test_predict_returns_probabilities(self, model: OnnxNliModel) -> None:
        (row,) = model.predict([("A man is playing a guitar.", "A man is playing music.")])
        assert sum(row) == pytest.approx(1.0, abs=1e-5) and all(0 <= p <= 1 for p in row)

    def test_predict_refuses_a_pair_over_the_window(self, model: OnnxNliModel) -> None:
        long = "word " * 400
        with pytest.raises(ModelUnavailableError, match="exceeds the window"):
            model.predict([(long, "claim")])

    def test_validate_judges_a_long_passage_in_windows(self) -> None:
        tier = load_tier(DEFAULT_MODEL_DIR)
        text = (
            ipc("420").text
            + " "
            + " ".join(
                f"Clause {i} says that a person shall keep the records of the office."
                for i in range(40)
            )
        )
        passage = type(ipc("420"))(semantic_id="IPC_420_0", doc_id="IPC_420", text=text)
        report = validate(
            "Cheating is punishable with imprisonment of up to seven years [IPC_420_0].",
            [passage],
            tier=tier,
        )
        scores = report.sentences[0].entailment
        # The sentence that says it is scored first and settles it: one pair.
        assert scores is not None and scores.windows == 1 and report.verdict is Verdict.GROUNDED
        assert Tier.ENTAILMENT in report.tiers
        # A claim nothing there entails: every sentence of the long passage is scored.
        unsupported = validate(
            "The records of the office are kept by the cheated person [IPC_420_0].",
            [passage],
            tier=tier,
        )
        scores = unsupported.sentences[0].entailment
        assert scores is not None and scores.windows == 41  # 41 sentences; too long to join
        assert unsupported.verdict is not Verdict.GROUNDED

    def test_validate_accepts_a_verbatim_quote_and_rejects_a_reversal(self) -> None:
        tier = load_tier(DEFAULT_MODEL_DIR)
        section = ipc("420")
        quoted = validate(f"{section.text} [IPC_420_0]", [section], tier=tier)
        assert quoted.verdict is Verdict.GROUNDED
        assert (
            quoted.sentences[0].entailment is not None and quoted.sentences[0].entailment.verbatim
        )
        reversed_ = validate(
            "Cheating is punishable with imprisonment for at least seven years [IPC_420_0].",
            [section],
            tier=tier,
        )
        assert reversed_.reason is Reason.PENALTY_MISMATCH


class TestScoreCache:
    PAIRS: ClassVar[list[tuple[str, str]]] = [
        ("Whoever commits theft shall be punished with imprisonment up to three years.",
         "Theft is punishable with up to three years in prison."),
        ("Whoever commits theft shall be punished with imprisonment up to three years.",
         "Theft is punishable with life imprisonment."),
    ]  # fmt: skip

    @staticmethod
    def counting(model: OnnxNliModel) -> list[int]:
        return count_encoder_calls(model.encoder)

    def test_a_pair_seen_before_costs_no_model_call_and_scores_the_same(self) -> None:
        cached = OnnxNliModel(DEFAULT_MODEL_DIR, cache_size=10)
        calls = self.counting(cached)
        first = cached.predict(self.PAIRS)
        again = cached.predict(list(reversed(self.PAIRS)))
        mixed = cached.predict([self.PAIRS[0], ("A man sleeps.", "A man is awake.")])
        assert calls == [2, 1]  # nothing for the repeat, only the new pair after
        assert again == list(reversed(first))
        assert mixed[0] == first[0]
        # The cached numbers are the model's own: a model without a cache gives the same.
        assert OnnxNliModel(DEFAULT_MODEL_DIR).predict(self.PAIRS) == first

    def test_size_zero_scores_every_call_and_the_oldest_pair_goes_first(self) -> None:
        uncached = OnnxNliModel(DEFAULT_MODEL_DIR)  # the default: what the benchmarks time
        calls = self.counting(uncached)
        uncached.predict(self.PAIRS)
        uncached.predict(self.PAIRS)
        assert calls == [2, 2]
        # Least recently used goes first: A and B in, A used again, C in: B is gone, A stays.
        small = OnnxNliModel(DEFAULT_MODEL_DIR, cache_size=2)
        calls = self.counting(small)
        a, b, c = (*self.PAIRS, ("A man sleeps.", "A man is awake."))
        for pair in (a, b, a, c, a, b):
            small.predict([pair])
        assert calls == [1, 1, 1, 1]  # a, b, c, then b again; the second and third a were hits

    def test_a_pair_twice_in_one_call_is_scored_once(self) -> None:
        cached = OnnxNliModel(DEFAULT_MODEL_DIR, cache_size=10)
        calls = self.counting(cached)
        rows = cached.predict([self.PAIRS[0], self.PAIRS[1], self.PAIRS[0]])
        assert calls == [2] and rows[0] == rows[2] != rows[1]

    def test_the_service_caches_by_default_and_the_setting_is_checked(self) -> None:
        assert ValidatorConfig.from_env({}).model_cache_size == DEFAULT_CACHE_SIZE > 0
        config = ValidatorConfig.from_env({"VALIDATOR_MODEL_CACHE_SIZE": "0"})
        assert config.model_cache_size == 0
        with pytest.raises(InvalidSettingError, match=r"^VALIDATOR_MODEL_CACHE_SIZE='-1'"):
            ValidatorConfig.from_env({"VALIDATOR_MODEL_CACHE_SIZE": "-1"})

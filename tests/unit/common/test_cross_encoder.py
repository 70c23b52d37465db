"""The shared cross-encoder loader: batch invariance, manifest reading, wrong-task models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from services.common.cross_encoder import UNCALIBRATED, ModelManifest, OnnxCrossEncoder
from services.common.errors import ModelUnavailableError
from services.validator.config import DEFAULT_MODEL_DIR
from services.validator.nli_onnx import OnnxNliModel


class TestBatchInvariance:
    def test_a_pairs_probabilities_do_not_depend_on_the_other_pairs(self) -> None:
        # int8 dynamic quantisation scales activations per run: batching pairs made one pair's
        # score depend on its batch-mates (up to 0.28 apart); every pair now runs alone.
        model = OnnxNliModel(DEFAULT_MODEL_DIR)
        pair = ("Whoever commits theft shall be punished with imprisonment.", "Theft is punished.")
        others = [
            ("A long unrelated premise about the Official Gazette and notices " * 6, "Rain."),
            ("Short.", "Whoever causes death by negligence is punished."),
        ]
        alone = model.predict([pair])[0]
        together = model.predict([others[0], pair, others[1]])[1]
        assert together == alone

    def test_pairs_run_side_by_side_score_exactly_as_one_after_another(self) -> None:
        pairs = [
            (f"Whoever commits offence {n} shall be punished with imprisonment for {n} years.",
             f"Offence {n} is punishable with {n + 1} years.")
            for n in range(1, 7)
        ]  # fmt: skip
        one = OnnxCrossEncoder(DEFAULT_MODEL_DIR, threads=1)
        two = OnnxCrossEncoder(DEFAULT_MODEL_DIR, threads=2)
        assert two._pool is not None and one._pool is None
        assert (two.probabilities(pairs) == one.probabilities(pairs)).all()


class TestPairTokens:
    def test_pair_tokens_is_what_the_window_check_counts(self) -> None:
        model = OnnxCrossEncoder(DEFAULT_MODEL_DIR)
        first, second = "Whoever commits theft shall be punished.", "Is theft punished?"
        # [CLS] first [SEP] second [SEP]
        expected = len(model.token_spans(first)) + len(model.token_spans(second)) + 3
        assert model.pair_tokens(first, second) == expected
        long = "word " * model.window_tokens()
        assert model.pair_tokens(long, second) > model.window_tokens()
        with pytest.raises(ModelUnavailableError, match="exceeds the window"):
            model.probabilities([(long, second)])


class TestManifest:
    def test_manifest_threshold_requires_a_calibrated_value(self) -> None:
        manifest = ModelManifest("m", {}, ("a",), 256, {"entail_threshold": 0.6})
        assert manifest.threshold("entail_threshold") == 0.6
        assert manifest.threshold("other", 0.5) == 0.5
        with pytest.raises(ModelUnavailableError, match="other"):
            manifest.threshold("other")

    def test_the_shipped_manifests_are_calibrated_and_load(self) -> None:
        from services.synthesis.config import DEFAULT_ANSWERABILITY_DIR
        from services.validator.nli_onnx import load_tier

        for directory in (DEFAULT_MODEL_DIR, DEFAULT_ANSWERABILITY_DIR):
            assert ModelManifest.read(directory).calibrated, directory
        assert load_tier(DEFAULT_MODEL_DIR).thresholds.entail == ModelManifest.read(
            DEFAULT_MODEL_DIR
        ).threshold("entail_threshold")
        answerability = ModelManifest.read(DEFAULT_ANSWERABILITY_DIR)
        assert 0 < answerability.threshold("veto_below") < answerability.threshold("rescue_at")

    def test_a_manifest_marked_uncalibrated_has_no_thresholds(self) -> None:
        # An export in place keeps no other graph's thresholds (training/export_onnx.py).
        marked = {"calibrated_on": UNCALIBRATED, "entail_threshold": 0.2}
        manifest = ModelManifest("m", {}, ("a",), 256, marked)
        assert not manifest.calibrated
        with pytest.raises(
            ModelUnavailableError, match=r"marked uncalibrated.*training\.calibrate"
        ):
            manifest.threshold("entail_threshold")
        assert manifest.threshold("veto_below", 0.3) == 0.3  # shadow mode's default: scores only

    def test_services_refuse_an_uncalibrated_model(self, tmp_path: Path) -> None:
        from types import SimpleNamespace

        from services.synthesis.answerability_onnx import options_from_manifest
        from services.validator.nli_onnx import load_tier

        target = tmp_path / "model"
        shutil.copytree(DEFAULT_MODEL_DIR, target)
        manifest = json.loads((target / "manifest.json").read_text())
        manifest["calibration"] = {"calibrated_on": UNCALIBRATED}
        (target / "manifest.json").write_text(json.dumps(manifest))
        with pytest.raises(ModelUnavailableError, match="uncalibrated"):
            load_tier(target)
        marked = ModelManifest("a", {}, ("answers", "not_answers"), 256, manifest["calibration"])
        scorer: Any = SimpleNamespace(encoder=SimpleNamespace(manifest=marked))
        with pytest.raises(ModelUnavailableError, match="uncalibrated"):
            options_from_manifest(scorer, "both")
        # An operator's explicit thresholds do not make it calibrated (the validator refuses
        # such a model whatever is set, and synthesis now decides alike).
        for mode in ("both", "veto", "rescue", "model"):
            with pytest.raises(ModelUnavailableError, match="uncalibrated"):
                options_from_manifest(scorer, mode, veto_below=0.4, rescue_at=0.7)
        assert options_from_manifest(scorer, "shadow").mode.value == "shadow"

    def test_the_contradiction_veto_comes_from_the_manifest_unless_set(
        self, tmp_path: Path
    ) -> None:
        from services.validator.nli_onnx import load_tier

        target = tmp_path / "model"
        shutil.copytree(DEFAULT_MODEL_DIR, target)
        manifest = json.loads((target / "manifest.json").read_text())
        manifest["calibration"].pop("contradiction_veto_threshold", None)
        (target / "manifest.json").write_text(json.dumps(manifest))
        assert load_tier(target).thresholds.veto is None  # none in the manifest: no veto
        manifest["calibration"]["contradiction_veto_threshold"] = 0.6
        (target / "manifest.json").write_text(json.dumps(manifest))
        assert load_tier(target).thresholds.veto == 0.6
        assert load_tier(target, veto=0.8).thresholds.veto == 0.8  # the setting wins
        assert load_tier(target, veto=1.0).thresholds.veto is None  # 1: off

    async def test_the_self_check_tells_a_model_that_runs_from_one_that_stopped(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from services.common.cross_encoder import OnnxCrossEncoder, encoders_of, still_runs
        from services.validator.nli_onnx import OnnxNliModel

        model = OnnxNliModel(DEFAULT_MODEL_DIR)
        (encoder,) = encoders_of(model, None, object())
        assert encoder is model.encoder
        assert await still_runs([encoder]) is None

        def out_of_memory(*_: object, **__: object) -> None:
            raise RuntimeError("failed to allocate memory")

        monkeypatch.setattr(OnnxCrossEncoder, "_run", out_of_memory)
        problem = await still_runs([encoder])
        assert problem is not None and "failed to allocate memory" in problem
        assert problem.startswith(encoder.name)

    def test_nli_wrapper_rejects_a_model_of_another_task(self, tmp_path: Path) -> None:
        target = tmp_path / "model"
        shutil.copytree(DEFAULT_MODEL_DIR, target)
        manifest = json.loads((target / "manifest.json").read_text())
        manifest["labels"] = ["answers", "not_answers", "other"]
        (target / "manifest.json").write_text(json.dumps(manifest))
        with pytest.raises(ModelUnavailableError, match="not an NLI model"):
            OnnxNliModel(target)


class TestPassageFormat:
    def test_a_manifest_without_a_passage_format_reads_bare_sentences(self) -> None:
        manifest = ModelManifest.read(DEFAULT_MODEL_DIR)
        assert manifest.passage_format == "text"

    def test_the_manifest_passage_format_reaches_the_answerability_scorer(
        self, tmp_path: Path
    ) -> None:
        from services.common.answerability_model import OnnxAnswerabilityScorer
        from services.synthesis.config import DEFAULT_ANSWERABILITY_DIR

        target = tmp_path / "model"
        shutil.copytree(DEFAULT_ANSWERABILITY_DIR, target)
        manifest = json.loads((target / "manifest.json").read_text())
        manifest["passage_format"] = "statute-heading"
        (target / "manifest.json").write_text(json.dumps(manifest))
        assert OnnxAnswerabilityScorer(target).passage_format == "statute-heading"

    def test_an_unknown_passage_format_stops_the_model_loading(self, tmp_path: Path) -> None:
        target = tmp_path / "model"
        shutil.copytree(DEFAULT_MODEL_DIR, target)
        manifest = json.loads((target / "manifest.json").read_text())
        manifest["passage_format"] = "title+text"
        (target / "manifest.json").write_text(json.dumps(manifest))
        with pytest.raises(ModelUnavailableError, match="passage_format"):
            OnnxNliModel(target)


class TestStartUpCheck:
    def test_the_answerability_model_starts_with_the_pair_its_self_check_scores(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # A failed request's self-check (OnnxCrossEncoder.self_check) asks the model what
        # start-up asked, so "still runs" means what it meant at start-up.
        from services.common.answerability_model import load_scorer
        from services.common.cross_encoder import SELF_CHECK_PAIR
        from services.synthesis.config import DEFAULT_ANSWERABILITY_DIR

        scored: list[tuple[str, str]] = []
        real = OnnxCrossEncoder.probabilities

        def spy(self: OnnxCrossEncoder, pairs: Any) -> Any:
            scored.extend(pairs)
            return real(self, pairs)

        monkeypatch.setattr(OnnxCrossEncoder, "probabilities", spy)
        load_scorer(DEFAULT_ANSWERABILITY_DIR)
        assert scored[0] == SELF_CHECK_PAIR

    def test_a_model_failing_its_start_up_check_does_not_load(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from services.common.answerability_model import load_scorer
        from services.synthesis.config import DEFAULT_ANSWERABILITY_DIR

        monkeypatch.setattr(OnnxCrossEncoder, "self_check", lambda self: "out of memory")
        with pytest.raises(ModelUnavailableError, match="start-up check: out of memory"):
            load_scorer(DEFAULT_ANSWERABILITY_DIR)


class TestTokenTypes:
    """A model is fed the token type ids it was trained with (manifest ``token_types``)."""

    PAIR = ("Whoever commits theft shall be punished with imprisonment.", "Theft is punished.")

    def _copy(self, tmp_path: Path, value: str | None) -> Path:
        target = tmp_path / f"model-{value}"
        shutil.copytree(DEFAULT_MODEL_DIR, target)
        manifest = json.loads((target / "manifest.json").read_text())
        if value is None:
            manifest.pop("token_types", None)
        else:
            manifest["token_types"] = value
        (target / "manifest.json").write_text(json.dumps(manifest))
        return target

    def test_a_manifest_without_the_key_is_served_segment_ids(self, tmp_path: Path) -> None:
        bare = OnnxCrossEncoder(self._copy(tmp_path, None))
        segments = OnnxCrossEncoder(self._copy(tmp_path, "segments"))
        assert bare.manifest.token_types == "segments"
        assert (bare.probabilities([self.PAIR]) == segments.probabilities([self.PAIR])).all()

    def test_zeros_feeds_the_graph_all_zero_token_types(self, tmp_path: Path) -> None:
        model = OnnxCrossEncoder(self._copy(tmp_path, "zeros"))
        fed: list[dict[str, object]] = []
        run = model._session.run

        def spy(names: object, feeds: dict[str, object]) -> object:
            fed.append(feeds)
            return run(names, feeds)  # type: ignore[arg-type]

        model._session.run = spy  # type: ignore[method-assign]
        zeros = model.probabilities([self.PAIR])
        (types,) = [f["token_type_ids"] for f in fed]
        assert not types.any()  # type: ignore[attr-defined]
        segments = OnnxCrossEncoder(self._copy(tmp_path, "segments")).probabilities([self.PAIR])
        assert not (zeros == segments).all()  # the graph reads token types: the key matters

    def test_an_unknown_value_stops_the_model_loading(self, tmp_path: Path) -> None:
        with pytest.raises(ModelUnavailableError, match="token_types"):
            OnnxCrossEncoder(self._copy(tmp_path, "ones"))


class TestPassageText:
    def test_statute_heading_prefixes_a_statute_sentence_only(self) -> None:
        from services.common.evidence import Chunk, passage_text

        statute = Chunk("IPC_380_0", "IPC_380", "Whoever commits theft.", "Theft in dwelling house",
                        section="380", act="IPC")  # fmt: skip
        article = Chunk("COI_21_0", "COI_21", "No person shall be deprived.", "Protection",
                        section="21", act="COI")  # fmt: skip
        other = Chunk("doc_0", "doc", "Paris is in France.", "Paris")
        assert passage_text(statute) == "Whoever commits theft."
        assert passage_text(statute, "statute-heading") == (
            "Section 380. Theft in dwelling house: Whoever commits theft."
        )
        assert passage_text(article, "statute-heading").startswith("Article 21. Protection: ")
        assert passage_text(other, "statute-heading") == "Paris is in France."
        with pytest.raises(ValueError, match="passage format"):
            passage_text(other, "title+text")

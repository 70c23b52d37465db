"""What a rebuild or a rerun reproduces, and that a build or a run which would not says so.

The two rebuild tests read the shared training data only where ``SHARED_TRAIN`` names it
(``SHARED_TRAIN=../shared/data/train pytest ...``); without it they are skipped, so ``make
test`` never reads ``../shared`` even on a machine that has it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from training import vendored

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "training" / "data"
_NAMED = os.environ.get("SHARED_TRAIN", "")
SHARED = Path(_NAMED)
needs_shared = pytest.mark.skipif(
    not (_NAMED and (SHARED / "nli").is_dir()),
    reason="SHARED_TRAIN does not name the shared training data (make test never reads it)",
)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_mix(folder: Path, text: str, **extra: object) -> None:
    folder.mkdir(parents=True)
    (folder / "train.jsonl.gz").write_text(text)
    manifest = {"files": {"train.jsonl.gz": sha(folder / "train.jsonl.gz")}, **extra}
    (folder / "manifest.json").write_text(json.dumps(manifest))


class TestVendoredMixGuard:
    def test_a_build_with_other_bytes_is_refused_and_the_mix_kept(self, tmp_path: Path) -> None:
        out, built = tmp_path / "vendored", tmp_path / "built"
        write_mix(out, "old", train_pairs=2)
        write_mix(built, "new", train_pairs=3)
        with pytest.raises(SystemExit) as refused:
            vendored.install(built, out, force=False)
        message = str(refused.value)
        assert "files.train.jsonl.gz: vendored" in message and "--force" in message
        assert "train_pairs: vendored 2, built 3" in message
        assert (out / "train.jsonl.gz").read_text() == "old"
        assert json.loads((out / "manifest.json").read_text())["train_pairs"] == 2

    def test_force_replaces_it_and_drops_files_no_longer_listed(self, tmp_path: Path) -> None:
        out, built = tmp_path / "vendored", tmp_path / "built"
        write_mix(out, "old")
        write_mix(built, "new")
        (built / "train.jsonl.gz").rename(built / "train.jsonl.xz")
        manifest = {"files": {"train.jsonl.xz": sha(built / "train.jsonl.xz")}}
        (built / "manifest.json").write_text(json.dumps(manifest))
        assert vendored.install(built, out, force=True)
        assert (out / "train.jsonl.xz").read_text() == "new"
        assert not (out / "train.jsonl.gz").exists()
        assert json.loads((out / "manifest.json").read_text()) == manifest

    def test_the_same_bytes_leave_the_folder_as_it_is(self, tmp_path: Path) -> None:
        out, built = tmp_path / "vendored", tmp_path / "built"
        write_mix(out, "same", derived_from={"data": "var/train/x", "files": {"a": "1"}})
        write_mix(built, "same", derived_from={"data": "/tmp/elsewhere", "files": {"a": "1"}})
        before = (out / "manifest.json").read_text()
        assert vendored.install(built, out, force=False) == []
        assert (out / "manifest.json").read_text() == before  # the read-from path is ignored

    def test_an_empty_folder_takes_the_build(self, tmp_path: Path) -> None:
        built = tmp_path / "built"
        write_mix(built, "new")
        assert vendored.install(built, tmp_path / "out", force=False) == []
        assert (tmp_path / "out" / "train.jsonl.gz").read_text() == "new"


@pytest.mark.slow
@needs_shared
def test_the_entailment_mix_rebuilds_byte_for_byte(tmp_path: Path) -> None:
    """``python -m training.build_data`` gives the vendored files and manifest (about 20 s)."""
    from training import build_data

    build_data.main(["--shared", str(SHARED), "--out", str(tmp_path)])
    vendored_manifest = json.loads((DATA / "entailment" / "manifest.json").read_text())
    for name, expected in vendored_manifest["files"].items():
        assert sha(tmp_path / name) == expected, name
    assert sha(tmp_path / "manifest.json") == sha(DATA / "entailment" / "manifest.json")
    model = json.loads((ROOT / "models" / "entailment-minilm-l6" / "manifest.json").read_text())
    assert model["training_data_manifest_sha256"] == sha(tmp_path / "manifest.json")


@pytest.mark.slow
@needs_shared
def test_the_answerability_mix_rebuilt_at_this_code_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plain mix no longer rebuilds at this code (the sentence splitter changed after v6:
    training/data/answerability/SOURCE.md), so ``make train-data`` must not overwrite the
    vendored mix with it. If this fails because the rebuild matches again, say so in SOURCE.md."""
    from training import add_statute_headings, build_answerability_data

    plain, out = tmp_path / "plain", tmp_path / "answerability"
    build_answerability_data.main(["--shared", str(SHARED), "--out", str(plain)])
    assert "is not the one training/data/answerability was derived from" in capsys.readouterr().err
    shutil.copytree(DATA / "answerability", out)
    with pytest.raises(SystemExit) as refused:
        add_statute_headings.main(["--data", str(plain), "--out", str(out)])
    assert "derived_from.files.train.jsonl.gz: vendored 7a183a0f" in str(refused.value)
    for name, expected in json.loads((out / "manifest.json").read_text())["files"].items():
        assert sha(out / name) == expected == sha(DATA / "answerability" / name)


def tiny_run(lr: float = 1e-2) -> tuple[Any, Any, Any]:
    import torch

    from training.loop import adamw_linear

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer, scheduler = adamw_linear(model, lr, 10, 0.1)
    return model, optimizer, scheduler


FP = {"sha256 train.jsonl.xz": "a" * 64, "lr": 6e-5, "seed": 1, "total_steps": 10}


class TestCheckpointFingerprint:
    """training.loop.resume: a checkpoint resumes only the run that wrote it."""

    def saved(self, path: Path, step: int = 3) -> None:
        import torch

        from training.loop import save_checkpoint

        model, optimizer, scheduler = tiny_run()
        state = {"step": step, "epoch": 0, "batch": step, "loss_ema": 0.5}
        with torch.no_grad():
            model.weight.fill_(7.0)
        save_checkpoint(path, model, optimizer, scheduler, state, FP)

    def test_the_same_run_resumes_and_says_from_where(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        import logging

        from training.loop import resume

        self.saved(tmp_path / "checkpoint.pt")
        model, optimizer, scheduler = tiny_run()
        with caplog.at_level(logging.INFO):
            state = resume(
                tmp_path / "checkpoint.pt", model, optimizer, scheduler,
                logging.getLogger("t"), dict(FP),
            )  # fmt: skip
        assert state["step"] == 3 and model.weight[0, 0].item() == 7.0
        assert "resumed from" in caplog.text and "at step 3" in caplog.text
        assert "lr=6e-05" in caplog.text and "aaaa" not in caplog.text

    def test_another_run_is_refused_naming_what_differs(self, tmp_path: Path) -> None:
        import logging

        from training.loop import resume

        self.saved(tmp_path / "checkpoint.pt")
        model, optimizer, scheduler = tiny_run()
        other = {**FP, "lr": 9e-5, "total_steps": 20}
        with pytest.raises(SystemExit) as refused:
            resume(
                tmp_path / "checkpoint.pt", model, optimizer, scheduler,
                logging.getLogger("t"), other,
            )  # fmt: skip
        message = str(refused.value)
        assert "lr: 6e-05 in the checkpoint, 9e-05 now" in message
        assert "total_steps: 10 in the checkpoint, 20 now" in message
        assert "--fresh" in message and "seed" not in message
        assert model.weight[0, 0].item() != 7.0  # nothing was loaded

    def test_fresh_starts_over(self, tmp_path: Path) -> None:
        import logging

        from training.loop import resume

        self.saved(tmp_path / "checkpoint.pt")
        model, optimizer, scheduler = tiny_run()
        other = {**FP, "seed": 7}
        state = resume(
            tmp_path / "checkpoint.pt", model, optimizer, scheduler,
            logging.getLogger("t"), other, fresh=True,
        )  # fmt: skip
        assert state["step"] == 0 and model.weight[0, 0].item() != 7.0

    def test_fresh_gets_past_an_unreadable_checkpoint(self, tmp_path: Path) -> None:
        import logging

        from training.loop import resume

        (tmp_path / "checkpoint.pt").write_bytes(b"truncated")  # a run killed while saving
        model, optimizer, scheduler = tiny_run()
        state = resume(
            tmp_path / "checkpoint.pt", model, optimizer, scheduler,
            logging.getLogger("t"), FP, fresh=True,
        )  # fmt: skip
        assert state["step"] == 0

    def test_a_checkpoint_without_a_fingerprint_is_refused(self, tmp_path: Path) -> None:
        import logging

        import torch

        from training.loop import resume

        self.saved(tmp_path / "checkpoint.pt")
        saved = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
        del saved["fingerprint"]
        torch.save(saved, tmp_path / "checkpoint.pt")
        model, optimizer, scheduler = tiny_run()
        with pytest.raises(SystemExit, match="has no fingerprint"):
            resume(
                tmp_path / "checkpoint.pt", model, optimizer, scheduler,
                logging.getLogger("t"), dict(FP),
            )  # fmt: skip

    def test_a_gpu_checkpoint_resumes_without_a_gpu(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A checkpoint with a CUDA RNG state, loaded where torch sees no GPU: the state is
        left alone (and said so); everything else resumes; the load maps onto the CPU."""
        import logging

        import torch

        from training.loop import resume

        self.saved(tmp_path / "checkpoint.pt")
        saved = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
        saved["cuda_rng"] = [torch.zeros(16, dtype=torch.uint8)]
        torch.save(saved, tmp_path / "checkpoint.pt")
        asked: dict[str, object] = {}
        load = torch.load

        def spy(*args: Any, **kwargs: Any) -> Any:
            asked.update(kwargs)
            return load(*args, **kwargs)

        monkeypatch.setattr(torch, "load", spy)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
        model, optimizer, scheduler = tiny_run()
        with caplog.at_level(logging.INFO):
            state = resume(
                tmp_path / "checkpoint.pt", model, optimizer, scheduler,
                logging.getLogger("t"), dict(FP),
            )  # fmt: skip
        assert state["step"] == 3 and asked.get("map_location") == "cpu"
        assert "CUDA RNG state is not restored" in caplog.text


@pytest.mark.slow
def test_a_rerun_with_other_arguments_does_not_resume_a_stale_checkpoint(tmp_path: Path) -> None:
    """The audit's case: a run stopped at step 2, then one with other data size, lr and seed in
    the same --out. It used to resume at step 2 under the old scheduler while final/training.json
    recorded the new arguments; now it stops, and --fresh trains the new run from step 0."""
    from training.train_entailment import main as train

    common = [
        "--data", str(DATA / "entailment"), "--batch-size", "16", "--epochs", "1",
        "--heldback-limit", "4", "--checkpoint-every", "1", "--threads", "1",
        "--out", str(tmp_path),
    ]  # fmt: skip
    train([*common, "--limit", "48", "--max-steps", "2"])
    with pytest.raises(SystemExit) as refused:
        train([*common, "--limit", "96", "--lr", "9e-5", "--seed", "7"])
    message = str(refused.value)
    for changed in ("limit: 48 in the checkpoint, 96 now", "lr: 5e-05", "seed: 20261124",
                    "total_steps: 3 in the checkpoint, 6 now"):  # fmt: skip
        assert changed in message
    assert not (tmp_path / "final").exists()
    train([*common, "--limit", "96", "--lr", "9e-5", "--seed", "7", "--fresh"])
    summary = json.loads((tmp_path / "final" / "training.json").read_text())
    assert summary["steps"] == 6 and summary["lr"] == 9e-5 and summary["seed"] == 7
    assert "--fresh: not resuming" in (tmp_path / "train.log").read_text()


def test_training_stops_on_data_its_manifest_does_not_describe(tmp_path: Path) -> None:
    from training.train_entailment import checked_data

    shutil.copytree(DATA / "entailment", tmp_path / "mix")
    names = ["train.jsonl.xz", "heldback.jsonl.gz"]
    assert (
        checked_data(tmp_path / "mix", names)
        == json.loads((DATA / "entailment" / "manifest.json").read_text())["files"]
    )
    with (tmp_path / "mix" / "heldback.jsonl.gz").open("ab") as handle:
        handle.write(b"\0")
    with pytest.raises(SystemExit, match=r"heldback.jsonl.gz: sha256 [0-9a-f]{64}, .* says 7a317c"):
        checked_data(tmp_path / "mix", names)
    (tmp_path / "mix" / "manifest.json").unlink()
    with pytest.raises(SystemExit, match=r"has no manifest\.json"):
        checked_data(tmp_path / "mix", names)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run (32 pairs, 2 steps) exported to int8 ONNX as a model folder."""
    from training.export_onnx import main as export
    from training.train_entailment import main as train

    run = tmp_path_factory.mktemp("run")
    train([
        "--data", str(DATA / "entailment"), "--limit", "32", "--batch-size", "16",
        "--epochs", "1", "--heldback-limit", "4", "--threads", "1", "--out", str(run),
    ])  # fmt: skip
    # A calibrated manifest already in --out (an export in place): its thresholds must not stay.
    (run / "model").mkdir()
    shutil.copyfile(
        ROOT / "models" / "entailment-minilm-l6" / "manifest.json", run / "model" / "manifest.json"
    )
    # The exporter uses torch's TorchScript-based ONNX export (dynamo=False) on purpose; it and
    # the tracer warn about the model's own code, which is not what these tests check.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export([
            "--model", str(run / "final"), "--data", str(DATA / "entailment"), "--threads", "1",
            "--heldback-limit", "4", "--out", str(run / "model"), "--name", "tiny",
        ])  # fmt: skip
    return run


@pytest.mark.slow
def test_a_run_records_what_a_rerun_must_match(exported: Path) -> None:
    """training.json and the exported manifest name the device, the base weights' and data's
    sha256s and the library versions (training and export)."""
    from training.train_entailment import base_model_path

    summary = json.loads((exported / "final" / "training.json").read_text())
    base = sha(base_model_path() / "model.safetensors")
    data = json.loads((DATA / "entailment" / "manifest.json").read_text())["files"]
    assert summary["base_sha256"] == base and summary["data_sha256"] == data
    assert summary["device"].startswith(("cpu: ", "cuda: "))
    assert set(summary["versions"]) == {"python", "torch", "transformers", "tokenizers"}
    manifest = json.loads((exported / "model" / "manifest.json").read_text())
    for key in ("device", "base_sha256", "data_sha256", "versions"):
        assert manifest["training"][key] == summary[key], key
    assert {"torch", "transformers", "onnx", "onnxruntime"} <= set(manifest["export"])


@pytest.mark.slow
def test_the_manifest_feeds_what_the_run_trained_with_unless_a_rule_chose(exported: Path) -> None:
    """The tiny run trained with segment ids: its manifest says so by default, and an export
    with --serve-token-types zeros says zeros while recording what the run trained with (so
    `make train-models` can rebuild v4, trained with zeros, as it is served: segment ids)."""
    from training.export_onnx import main as export

    manifest = json.loads((exported / "model" / "manifest.json").read_text())
    assert manifest["token_types"] == manifest["training"]["token_types"] == "segments"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export([
            "--model", str(exported / "final"), "--data", str(DATA / "entailment"),
            "--threads", "1", "--heldback-limit", "4", "--out", str(exported / "served_zeros"),
            "--name", "tiny", "--serve-token-types", "zeros",
        ])  # fmt: skip
    manifest = json.loads((exported / "served_zeros" / "manifest.json").read_text())
    assert manifest["token_types"] == "zeros" and manifest["training"]["token_types"] == "segments"


@pytest.mark.slow
def test_an_export_in_place_is_marked_uncalibrated_and_refused(exported: Path) -> None:
    from services.common.cross_encoder import UNCALIBRATED, ModelManifest
    from services.common.errors import ModelUnavailableError
    from services.validator.nli_onnx import load_tier

    manifest = ModelManifest.read(exported / "model")
    assert manifest.calibration == {
        "calibrated_on": UNCALIBRATED,
        "next": "python -m training.calibrate",
    }
    with pytest.raises(ModelUnavailableError, match="uncalibrated"):
        load_tier(exported / "model")


class TestReportsNameTheirModel:
    """evaluation.models in a report's run.config; the answerability calibrator reads it."""

    def test_the_models_an_in_process_stack_loads(self, tmp_path: Path) -> None:
        from evaluation.models import ANSWERABILITY, ENTAILMENT, STATEMENT, models_used, sha_key

        shipped = ROOT / "models" / "answerability-minilm-l6"
        other = tmp_path / "answerability"
        shutil.copytree(shipped, other)
        manifest = json.loads((other / "manifest.json").read_text())
        (other / "manifest.json").write_text(json.dumps({**manifest, "name": "candidate"}))
        (other / "model.onnx").write_bytes(b"another graph")
        found = models_used({"SYNTHESIS_ANSWERABILITY_MODEL_DIR": str(other)})
        entailment = json.loads(
            (ROOT / "models" / "entailment-minilm-l6" / "manifest.json").read_text()
        )
        assert found[ENTAILMENT].startswith(entailment["name"] + " (")
        assert found[sha_key(ENTAILMENT)] == entailment["files"]["model.onnx"]
        assert found[sha_key(STATEMENT)] == entailment["files"]["model.onnx"]
        assert found[ANSWERABILITY] == f"candidate ({other})"
        assert found[sha_key(ANSWERABILITY)] == hashlib.sha256(b"another graph").hexdigest()
        broken = models_used({"VALIDATOR_ENTAILMENT_MODEL_DIR": str(tmp_path / "none")})
        assert broken[ENTAILMENT].startswith("unreadable: ") and sha_key(ENTAILMENT) not in broken

    @staticmethod
    def report(folder: Path, model_sha: str | None) -> Path:
        from evaluation.models import ANSWERABILITY, sha_key

        config = {"server settings": "SYNTHESIS_ANSWERABILITY=shadow"}
        if model_sha is not None:
            config[sha_key(ANSWERABILITY)] = model_sha
        folder.mkdir(parents=True)
        path = folder / "report.json"
        path.write_text(json.dumps({"run": {"data_path": "squad2", "config": config}, "items": []}))
        return path

    def test_the_calibrator_refuses_a_report_of_another_model(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from training.calibrate_answerability import check_model

        check_model(self.report(tmp_path / "same", "a" * 64), "a" * 64)
        with pytest.raises(SystemExit, match=r"another answerability model .*aaaaaaaaaaaa"):
            check_model(self.report(tmp_path / "other", "a" * 64), "b" * 64)
        check_model(self.report(tmp_path / "unnamed", None), "b" * 64)
        assert "does not name its answerability model" in capsys.readouterr().out

    def test_the_newest_report_of_this_model_is_picked_not_the_newest(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from evaluation import report as report_module
        from training.calibrate_answerability import newest_shadow

        # newest_report's root is keyword-only, defaulting to reports/eval
        monkeypatch.setattr(report_module.newest_report, "__kwdefaults__", {"root": tmp_path})
        mine = self.report(tmp_path / "20261126T010000Z-squad2", "a" * 64)
        self.report(tmp_path / "20261126T020000Z-squad2", "b" * 64)  # newer, another model
        assert newest_shadow("squad2", "squad2", "a" * 64) == mine
        with pytest.raises(SystemExit, match="made with this model"):
            newest_shadow("squad2", "squad2", "c" * 64)

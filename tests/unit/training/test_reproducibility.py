"""What a rebuild or a rerun reproduces, and that a build or a run which would not says so.

The two rebuild tests read ``../shared/data/train`` (``SHARED_TRAIN`` overrides where); without
it they are skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from training import vendored

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "training" / "data"
SHARED = Path(os.environ.get("SHARED_TRAIN", ROOT.parent / "shared" / "data" / "train"))
needs_shared = pytest.mark.skipif(
    not (SHARED / "nli").is_dir(), reason=f"no shared training data at {SHARED}"
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

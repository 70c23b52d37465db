"""Runs the atheris (libFuzzer) byte-level targets in a subprocess: atheris.Fuzz() exits the process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.atheris_targets import SEEDS
from tests.fuzz.profiles import PROFILE, TIMEOUT_S

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(TIMEOUT_S)
RUNS = {"default": 5_000, "nightly": 200_000}[PROFILE]


def test_atheris_parsing_targets_run_without_a_crash(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i, seed in enumerate(SEEDS):
        (corpus / f"seed{i}").write_bytes(seed)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.fuzz.atheris_targets",
            f"-runs={RUNS}",
            "-seed=1" if PROFILE == "default" else "-seed=0",
            f"-artifact_prefix={tmp_path}/",
            str(corpus),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    done = re.search(r"Done (\d+) runs", output)
    assert done and int(done.group(1)) >= RUNS, output[-2000:]
    assert not list(tmp_path.glob("crash-*"))

"""The query-encoder benchmark runs end to end (a smoke run; timings are not asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import query_encoder

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_both_runtimes_timed_and_their_neighbours_compared(tmp_path: Path, ipc_index: Path) -> None:
    out = tmp_path / "query_encoder.json"
    argv = ["--queries", "6", "--repeats", "1", "--index-dir", str(ipc_index), "--out", str(out)]

    assert query_encoder.main(argv) == 0

    report = json.loads(out.read_text())
    assert report["latency"]["torch"]["n"] == report["latency"]["onnx"]["n"] == 6
    assert report["max_abs_difference"] <= 1e-5
    assert report["faiss"]["same_top10"] == report["faiss"]["queries"] == 6
    assert report["rss_mib"]["with_onnx"] > 0
    # The service frees the checked torch weights (about 90 MiB of MiniLM's).
    assert report["rss_mib"]["serving"] < report["rss_mib"]["with_onnx"]
    assert "python -m bench.query_encoder --queries 6" in out.with_suffix(".md").read_text()

"""The first-OpenAI-call benchmark runs end to end (a smoke run; timings are not asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import openai_first_call

pytestmark = [pytest.mark.integration, pytest.mark.slow]


class TestOpenAIFirstCallHarness:
    def test_one_run_per_variant_writes_both_rows(self, tmp_path: Path) -> None:
        out = tmp_path / "openai_first_call.json"

        assert openai_first_call.main(["--runs", "1", "--out", str(out)]) == 0

        report = json.loads(out.read_text())
        assert [len(report["samples"][mode]) for mode in ("cold", "warm")] == [1, 1]
        assert report["median_ms"]["cold"]["warm_up_ms"] == 0.0
        for mode in ("cold", "warm"):
            assert report["median_ms"][mode]["first_ms"] > 0
            assert report["median_ms"][mode]["second_ms"] > 0
        assert report["median_ms"]["warm"]["warm_up_ms"] > 0
        assert "python -m bench.openai_first_call --runs 1" in out.with_suffix(".md").read_text()

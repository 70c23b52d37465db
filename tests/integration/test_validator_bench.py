"""The validator benchmark harness runs end to end (a smoke run; timings are not asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import validator_perf

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RUNS = ("validator", "validator_threaded", "validator_bare", "validator_refusal", "echo")


class TestValidatorPerfHarness:
    def test_validator_perf_quick_run_writes_every_row_without_errors(self, tmp_path: Path) -> None:
        out = tmp_path / "validator_perf.json"

        assert validator_perf.main(["--quick", "--out", str(out)]) == 0

        report = json.loads(out.read_text())
        assert report["in_process"]["verdict"] == "grounded"
        for key in RUNS:
            row = report["grpc"][key]
            assert row["calls"] > 0, key
            assert row["errors"] == 0, key
        assert report["grpc"]["throughput_ratio"] is not None
        markdown = out.with_suffix(".md").read_text()
        assert "exact refusal (no checks run)" in markdown
        assert "python -m bench.validator_perf --quick" in markdown


class TestValidatorModelHarness:
    def test_validator_model_quick_run_times_every_configuration(self, tmp_path: Path) -> None:
        from bench import validator_model

        out = tmp_path / "validator_model.json"

        assert validator_model.main(["--quick", "--out", str(out)]) == 0

        report = json.loads(out.read_text())
        local = report["in_process"]
        assert local["lexical_only"]["model_judged"] == 0
        assert local["model_1_thread"]["model_judged"] == 5  # every sentence reached the model
        assert {"lexical_only", "model"} <= set(report["grpc"])
        assert report["model_alone"]["threads_1_batch_5"]["p50_ms"] > 0
        low, high = local["model_1_thread"]["p95_ci95_ms"]  # every p95 has its interval
        assert low <= high and report["grpc"]["model"]["p95_ci95_ms"][0] > 0
        assert "python -m bench.validator_model --quick" in out.with_suffix(".md").read_text()

    def test_p95_interval_is_seeded_and_brackets_the_p95(self) -> None:
        import random

        from bench.loadgen import percentile
        from bench.validator_model import p95_interval

        rng = random.Random(7)
        samples = [rng.gauss(40.0, 3.0) for _ in range(300)]
        low, high = p95_interval(samples)
        assert low <= percentile(samples, 95) <= high
        assert p95_interval(samples) == (low, high)  # seeded: the same every run
        # Fewer repeats, a wider interval: what a single short run can and cannot settle.
        short_low, short_high = p95_interval(samples[:20])
        assert short_high - short_low > high - low


class TestModelAloneRows:
    def test_each_row_times_as_many_distinct_pairs_as_it_names(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # The model scores a pair repeated within a call once: a row of 32 pairs built from 5
        # repeated would time 5 (the rows of 10 and 32 did until 2026-11-28).
        from types import SimpleNamespace

        from bench import validator_model

        calls: list[tuple[int, int]] = []

        def predict(batch: list[tuple[str, str]]) -> list[tuple[float, float, float]]:
            calls.append((len(batch), len(set(batch))))
            return [(1.0, 0.0, 0.0)] * len(batch)

        fake = SimpleNamespace(model=SimpleNamespace(predict=predict))
        monkeypatch.setattr(validator_model, "load_tier", lambda *a, **k: fake)

        rows = validator_model.model_alone(Path("unused"), iterations=2)

        assert set(rows) == {f"threads_{t}_batch_{n}" for t in (1, 2) for n in (1, 5, 10, 32)}
        assert {size for size, _ in calls} == {1, 5, 10, 32}
        assert all(size == distinct for size, distinct in calls)


class TestFreshAdversarialHarness:
    def test_fresh_set_reports_headline_figures_only(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # Never a category, reason or case: the fresh set stays never tuned only unread.
        from bench import fresh_adversarial

        premise = (
            "Whoever commits theft shall be punished with imprisonment of either description "
            "for a term which may extend to three years, or with fine, or with both."
        )
        rows = [
            ("fadv-001", "Theft can be punished with up to three years in prison, a fine, or both.",
             "paraphrase", "paraphrase_plain"),
            ("fadv-002", "Theft always carries at least three years of imprisonment.",
             "contradiction", "bound_direction"),
        ]  # fmt: skip
        data = tmp_path / "pairs.jsonl"
        data.write_text(
            "".join(
                json.dumps(
                    {"id": i, "section": "IPC_379", "premise": premise, "claim": claim,
                     "label": label, "category": category, "note": "test"}
                ) + "\n"
                for i, claim, label, category in rows
            ),
            encoding="utf-8",
        )  # fmt: skip
        out = tmp_path / "fresh.json"

        assert fresh_adversarial.main(["--data", str(data), "--out", str(out)]) == 0

        report = json.loads(out.read_text())
        assert (report["pairs"], report["sections"]) == (2, 1)
        assert report["contradiction"]["n"] == report["paraphrase"]["n"] == 1
        assert report["command"].startswith("python -m bench.fresh_adversarial")
        printed = capsys.readouterr().out + out.read_text()
        for unread in ("bound_direction", "paraphrase_plain", "fadv-00", "reason", "categories"):
            assert unread not in printed


class TestBreakingNliHarness:
    def test_pairs_are_judged_in_both_configurations_and_scored_by_label(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # Written for this test (not pairs of the set): the set's own shape, xz-compressed.
        import lzma

        from bench import breaking_nli

        premise = "A man is playing a red guitar on a busy street."
        rows = [
            (1, "A man is playing a red guitar on a busy street.", "entailment", "synonyms"),
            (2, "A man is playing a blue guitar on a busy street.", "contradiction", "colors"),
            (3, "A man is playing a red guitar on a quiet street.", "contradiction", "antonyms"),
        ]
        data = tmp_path / "dataset.jsonl.xz"
        with lzma.open(data, "wt", encoding="utf-8") as handle:
            for pair_id, hypothesis, label, category in rows:
                handle.write(
                    json.dumps(
                        {"sentence1": premise, "sentence2": hypothesis, "gold_label": label,
                         "category": category, "pairID": pair_id}
                    ) + "\n"
                )  # fmt: skip
        out = tmp_path / "breaking_nli.json"

        assert breaking_nli.main(["--data", str(data), "--out", str(out)]) == 0

        report = json.loads(out.read_text())
        assert (report["pairs"], report["premises"]) == (3, 1)
        assert report["command"].startswith("python -m bench.breaking_nli")
        for name in breaking_nli.CONFIGURATIONS:
            figures = report[name]
            assert figures["entailment"]["n"] == 1
            assert figures["contradiction"]["n"] == 2
            assert figures["neutral"]["n"] == 0
            # The hypothesis that repeats its premise is quoted verbatim: accepted by every tier.
            assert figures["entailment"]["k"] == 1
            assert set(figures["contradiction"]["categories"]) == {"colors", "antonyms"}
        assert report["with_model"]["model"] and not report["cheap_tiers_alone"]["model"]
        printed = capsys.readouterr().out + out.read_text()
        assert "BNLI_" not in printed and "reason" not in printed

    def test_an_unknown_label_is_an_error_not_a_silent_group(self, tmp_path: Path) -> None:
        from bench import breaking_nli

        data = tmp_path / "pairs.jsonl"
        data.write_text(
            json.dumps({"sentence1": "a", "sentence2": "b", "gold_label": "-", "category": "x",
                        "pairID": 9}) + "\n",
            encoding="utf-8",
        )  # fmt: skip

        with pytest.raises(ValueError, match="pair 9: unknown label"):
            breaking_nli.read_pairs(data)

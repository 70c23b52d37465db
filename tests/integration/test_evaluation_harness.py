"""The evaluation harness end to end on a tiny IPC sample: real servers, real gRPC, real reports."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from evaluation.datasets import DEFAULT_PATHS
from evaluation.records import Status
from evaluation.run import DatasetResult, evaluate, parse_args
from tests.integration.conftest import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GOLDEN = ROOT / DEFAULT_PATHS["ipc"]
# Three answerable definitions and two questions the corpus cannot answer (an empty section of
# this copy of the IPC, and another statute).
ANSWERABLE = ("ipc-001", "ipc-002", "ipc-006")
UNANSWERABLE = ("ipc-004", "ipc-024")


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A golden-set file in the published format holding the five chosen records."""
    wanted = set(ANSWERABLE + UNANSWERABLE)
    lines = [
        line
        for line in GOLDEN.read_text(encoding="utf-8").splitlines()
        if line.strip() and json.loads(line)["id"] in wanted
    ]
    assert len(lines) == len(wanted)
    path = tmp_path_factory.mktemp("golden") / "sample.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass(frozen=True)
class HarnessRun:
    result: DatasetResult
    docs: Path


@pytest.fixture(scope="module")
async def run(
    sample: Path, ipc_index: Path, tmp_path_factory: pytest.TempPathFactory
) -> HarnessRun:
    """One harness run over the sample against in-process servers on the integration index."""
    reports = tmp_path_factory.mktemp("reports")
    docs = tmp_path_factory.mktemp("docs") / "EVALUATION.md"
    docs.write_text(
        "# Evaluation\n\n<!-- eval-summary:start -->\n<!-- eval-summary:end -->\n", encoding="utf-8"
    )
    options = parse_args(
        [
            "--dataset", "ipc",
            "--data", str(sample),
            "--limit", "5",
            "--index-dir", str(ipc_index),
            "--reports", str(reports),
            "--docs", str(docs),
            "--ablations",
        ]
    )  # fmt: skip
    results = await evaluate(options)
    assert len(results) == 1
    return HarnessRun(results[0], docs)


@pytest.fixture
def result(run: HarnessRun) -> DatasetResult:
    return run.result


class TestEvaluationHarness:
    async def test_harness_writes_every_report_file(self, result: DatasetResult) -> None:
        files = result.files
        for path in (files.json, files.markdown, *files.plots):
            assert path.is_file() and path.stat().st_size > 0, path
        assert {p.name for p in files.plots} == {"metrics.png", "latency.png"}
        assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in files.plots)
        markdown = files.markdown.read_text(encoding="utf-8")
        assert "## Targets" in markdown and "## Ablations" in markdown
        assert "--limit 5" in markdown  # the exact command is recorded

    async def test_the_report_names_the_models_it_measured(self, result: DatasetResult) -> None:
        from evaluation.models import ANSWERABILITY, ENTAILMENT, sha_key

        config = json.loads(result.files.json.read_text())["run"]["config"]
        for model, folder in ((ENTAILMENT, "entailment-minilm-l6"),
                              (ANSWERABILITY, "answerability-minilm-l6")):  # fmt: skip
            manifest = json.loads((ROOT / "models" / folder / "manifest.json").read_text())
            assert config[model].startswith(manifest["name"] + " (")
            assert config[sha_key(model)] == manifest["files"]["model.onnx"]

    async def test_harness_scores_every_item_without_errors(self, result: DatasetResult) -> None:
        report = result.report
        assert report.n_items == 5
        assert report.errors == {}
        statuses = {s.item_id: s.status for s in report.items}
        assert set(statuses) == set(ANSWERABLE + UNANSWERABLE)
        assert set(statuses.values()) <= {Status.ANSWERED.value, Status.REFUSED.value}

    async def test_harness_metrics_agree_with_item_outcomes(self, result: DatasetResult) -> None:
        metrics, items = result.report.metrics, result.report.items
        answerable = [s for s in items if s.answerable]
        unanswerable = [s for s in items if not s.answerable]
        refused = sum(s.status == Status.REFUSED.value for s in answerable)
        assert metrics["false_refusal_rate"].value == pytest.approx(refused / len(answerable))
        assert metrics["false_refusal_rate"].n == len(ANSWERABLE)
        declined = sum(s.status == Status.REFUSED.value for s in unanswerable)
        assert metrics["correct_refusal_rate"].value == pytest.approx(declined / len(unanswerable))
        assert metrics["correct_refusal_rate"].n == len(UNANSWERABLE)
        citations = sum(s.n_citations for s in answerable if s.status == Status.ANSWERED.value)
        # Some definition was answered with citations, so the citation metrics have data.
        assert citations > 0, [(s.item_id, s.status) for s in items]
        assert metrics["citation_precision"].n == citations
        assert metrics["citation_precision"].value is not None
        cited = sum(s.cites_gold_doc for s in answerable)
        assert metrics["gold_doc_cite_rate"].value == pytest.approx(cited / len(answerable))
        all_citations = sum(s.n_citations for s in items if s.status == Status.ANSWERED.value)
        assert metrics["invalid_citation_rate"].n == all_citations
        assert metrics["invalid_citation_rate"].value == 0.0
        for metric in metrics.values():
            if metric.value is None:
                assert metric.n == 0
                continue
            if metric.unit != "outcomes":  # rates, not latencies
                assert 0.0 <= metric.value <= 1.0, metric
            assert metric.ci_low is not None and metric.ci_high is not None
            assert metric.ci_low <= metric.value + 1e-9 and metric.value <= metric.ci_high + 1e-9
        # Every question went through all three real stages and was timed.
        assert metrics["latency_total_p50_ms"].n == 5
        assert metrics["latency_client_p95_ms"].value is not None
        assert metrics["retrieval_doc_recall@10"].n == len(ANSWERABLE)

    async def test_harness_default_threshold_ablation_reproduces_the_run(
        self, result: DatasetResult
    ) -> None:
        rows = {row.variant: row for row in result.ablations}
        default = rows["coverage 0.30 / 0.21 (default)"].metrics
        for name in ("false_refusal_rate", "correct_refusal_rate", "citation_precision"):
            # Each has data in this run (answerable and unanswerable items, cited answers).
            assert result.report.metrics[name].value is not None, name
            assert default[name].value == result.report.metrics[name].value, name
        hybrid = rows["hybrid (dense + BM25)"].metrics
        assert hybrid["retrieval_doc_recall@10"].value is not None

    async def test_harness_updates_the_docs_summary(self, run: HarnessRun) -> None:
        info = run.result.report.run
        assert info is not None
        text = run.docs.read_text(encoding="utf-8")
        assert info.command in text
        assert info.inputs[0].sha256[:16] in text
        # A sample file, not one of the registered sets: its row says nothing was recorded.
        assert "| ipc (sample.jsonl) | **unrecorded** | 5 |" in text
        assert "sample.jsonl is not in evaluation/datasets.py" in text

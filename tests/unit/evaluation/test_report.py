"""Report writing (JSON, Markdown, PNG) and the docs summary block."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evaluation.datasets import DEFAULT_PATHS, tuning_of
from evaluation.metrics import BootstrapConfig, Report, score_run
from evaluation.records import Citation, EvalItem, GoldEvidence, InputFile, Outcome, RunInfo
from evaluation.report import (
    SUMMARY_END,
    SUMMARY_START,
    ReportFiles,
    update_summary,
    write_report,
)
from services.common.refusal import REFUSAL

ROOT = Path(__file__).resolve().parents[3]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NOW = datetime(2026, 11, 22, 12, 30, 0, tzinfo=UTC)
SENTENCE = "Whoever commits theft shall be punished with imprisonment for three years."


def _report(
    dataset: str = "ipc",
    command: str = "make eval DATASET=ipc LIMIT=2",
    *,
    split: bool = False,
    data: str = "",
) -> Report:
    items = [
        EvalItem("ipc-001", "q", True, gold=(GoldEvidence("IPC_379", SENTENCE),), subset="p"),
        EvalItem("ipc-002", "q", False, subset="g"),
    ]
    outcomes = [
        Outcome.from_answer(
            "ipc-001",
            f"{SENTENCE} [IPC_379_0]",
            citations=(Citation("IPC_379_0", SENTENCE),),
            latency_ms={"total": 40.0, "retrieve": 8.0},
        ),
        Outcome.from_answer("ipc-002", REFUSAL, latency_ms={"total": 25.0}),
    ]
    data_path = data or str(DEFAULT_PATHS.get(dataset, "data/golden/ipc_golden_v1.jsonl"))
    run = RunInfo(
        dataset=dataset,
        data_path=data_path,
        inputs=(InputFile("data/golden/ipc_golden_v1.jsonl", "ab" * 32, 123),),
        corpus_checksum="cd" * 32,
        n_total=112,
        limit=2,
        command=command,
        started_at=NOW.isoformat(),
        config={"top_k": "8"},
        # As the register says for the data file (a split set: as if it were one).
        tuning="mixed" if split else tuning_of(Path(data_path)).label,
        tuning_note="even half tuned" if split else "chosen on it",
    )
    return score_run(
        items,
        outcomes,
        bootstrap=BootstrapConfig(resamples=200),
        run=run,
        # ipc-001 in the tune half, ipc-002 in the report half.
        tune_half=(lambda item_id: item_id == "ipc-001") if split else None,
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> ReportFiles:
    # Rendering PNGs is the slow part, so the module renders them once.
    return write_report(_report(), tmp_path_factory.mktemp("reports"), now=NOW)


class TestWriteReport:
    def test_write_report_produces_json_markdown_and_pngs(self, written: ReportFiles) -> None:
        files = written
        assert files.directory.name == "20261122T123000Z-ipc"
        decoded = json.loads(files.json.read_text())
        assert decoded["metrics"]["citation_precision"]["value"] == 1.0
        assert decoded["run"]["corpus_checksum"] == "cd" * 32
        assert [p.name for p in files.plots] == ["metrics.png", "latency.png"]
        for plot in files.plots:
            assert plot.read_bytes().startswith(PNG_MAGIC)

    def test_write_report_markdown_names_data_checksum_n_and_command(
        self, written: ReportFiles
    ) -> None:
        markdown = written.markdown.read_text()
        assert "`data/golden/ipc_golden_v1.jsonl`" in markdown
        assert "cd" * 32 in markdown and "ab" * 32 in markdown
        assert "Items scored: 2 of 112 (LIMIT: 2)" in markdown
        assert "`make eval DATASET=ipc LIMIT=2`" in markdown
        # One citation in one item: Wilson over that item, not a point.
        assert "| citation_precision | 1.000 (0.207–1.000) | 1 citations | 1 |" in markdown
        assert "Wilson score intervals for proportions" in markdown
        assert "## Subset: p" in markdown
        assert "![metrics](metrics.png)" in markdown

    def test_write_report_same_second_gets_new_directory(self, tmp_path: Path) -> None:
        first = write_report(_report(), tmp_path, now=NOW, plots=False)
        second = write_report(_report(), tmp_path, now=NOW, plots=False)
        assert first.directory != second.directory
        assert second.directory.name == "20261122T123000Z-ipc-2"
        assert second.plots == () and "## Plots" not in second.markdown.read_text()


class TestUpdateSummary:
    def _doc(self, tmp_path: Path) -> Path:
        path = tmp_path / "EVALUATION.md"
        path.write_text(f"# Eval\n\n{SUMMARY_START}\nnot yet run\n{SUMMARY_END}\n\nTail.\n")
        return path

    def test_update_summary_replaces_block_and_keeps_the_rest(self, tmp_path: Path) -> None:
        path = self._doc(tmp_path)
        update_summary(path, _report())
        text = path.read_text()
        assert "not yet run" not in text
        assert text.startswith("# Eval\n") and text.endswith("\n\nTail.\n")
        assert "| ipc | **tuned** | 2 | 1.000 (0.207–1.000) |" in text
        assert "Tuned on: chosen on it." in text
        assert "by half" not in text  # no split set
        assert "`make eval DATASET=ipc LIMIT=2`" in text

    def test_update_summary_keeps_rows_of_other_datasets(self, tmp_path: Path) -> None:
        path = self._doc(tmp_path)
        update_summary(path, _report())
        update_summary(path, _report("squad2", "make eval DATASET=squad2"))
        update_summary(path, _report("ipc", "make eval DATASET=ipc"))
        text = path.read_text()
        assert "| ipc | **tuned** | 2 |" in text and "| squad2 | **mixed** | 2 |" in text
        assert "LIMIT=2" not in text  # the ipc row was replaced, not duplicated
        assert text.count(SUMMARY_START) == 1 and text.count(SUMMARY_END) == 1

    def test_update_summary_value_cannot_close_the_comment(self, tmp_path: Path) -> None:
        path = self._doc(tmp_path)
        update_summary(path, _report(command="make eval --> oops"))
        update_summary(path, _report("squad2"))
        assert "| ipc | **tuned** | 2 |" in path.read_text()

    def test_update_summary_keeps_a_row_per_data_file_of_a_dataset(self, tmp_path: Path) -> None:
        path = self._doc(tmp_path)
        update_summary(path, _report())
        update_summary(path, _report(data="data/golden/ipc_plain_v1.jsonl", command="plain"))
        update_summary(path, _report(data="/abs/data/golden/ipc_plain_v1.jsonl", command="again"))
        text = path.read_text()
        assert "| ipc | **tuned** | 2 |" in text
        assert "| ipc (ipc_plain_v1.jsonl) | **never tuned** | 2 |" in text
        assert "`plain`" not in text and "`again`" in text  # the same file replaced its row

    def test_update_summary_gives_each_half_of_a_split_set(self, tmp_path: Path) -> None:
        path = self._doc(tmp_path)
        update_summary(path, _report("squad2", split=True))
        text = path.read_text()
        assert "| squad2 | **mixed** | 2 |" in text
        # The answered item is the tune half's, the refused unanswerable one the report half's.
        # SQuAD's report half is mixed by the register: its first 150 items were read.
        one = "1.000 (0.207–1.000)"
        report = "report (odd crc32, mixed: its items 1–150 were read for the keyword rules)"
        assert f"| squad2 | {report} | 1 | n/a | n/a | n/a | n/a | {one} |" in text
        assert f"| squad2 | tune (even crc32, tuned) | 1 | {one} | {one} | {one} | n/a | n/a |" in (
            text
        )
        assert text.index("| squad2 | report") < text.index("| squad2 | tune")

    def test_report_markdown_gives_each_half_and_the_tuning(self, tmp_path: Path) -> None:
        files = write_report(_report("squad2", split=True), tmp_path, now=NOW, plots=False)
        markdown = files.markdown.read_text()
        assert "- Tuned on: **mixed** (even half tuned)" in markdown
        assert "## Report half (odd crc32, mixed: its items 1–150 were read" in markdown
        assert "## Tune half (even crc32, tuned)" in markdown
        decoded = json.loads(files.json.read_text())
        assert decoded["halves"]["report"]["correct_refusal_rate"]["value"] == 1.0
        assert decoded["halves"]["tune"]["citation_precision"]["value"] == 1.0

    def test_update_summary_without_markers_raises(self, tmp_path: Path) -> None:
        path = tmp_path / "plain.md"
        path.write_text("# nothing here\n")
        with pytest.raises(ValueError, match="eval-summary"):
            update_summary(path, _report())

    def test_update_summary_shipped_docs_have_the_block(self, tmp_path: Path) -> None:
        copy = tmp_path / "EVALUATION.md"
        copy.write_text((ROOT / "docs/EVALUATION.md").read_text())
        update_summary(copy, dataclasses.replace(_report(), run=None))
        assert "| run | **unrecorded** | 2 |" in copy.read_text()

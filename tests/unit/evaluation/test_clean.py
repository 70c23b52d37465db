"""The register's labels for the parts of a split set, and the clean subset the harness scores."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from evaluation.clean import MIN_ITEMS, clean_subset, jaccard, question_words
from evaluation.datasets import Tuning, in_tune_half, tuning_of
from evaluation.metrics import BootstrapConfig, build_report, item_score_from_dict, score_run
from evaluation.records import EvalItem, GoldEvidence, InputFile, Outcome, RunInfo
from evaluation.report import clean_summary, update_summary, write_report
from evaluation.report import render_markdown as report_markdown
from services.common.refusal import REFUSAL

FAST = BootstrapConfig(resamples=50)
SQUAD = Path("data/eval/squad2/dev.json")


def _ids(odd: bool, count: int, prefix: str = "i") -> list[str]:
    """``count`` item ids whose crc32 is odd (report half) or even (tune half)."""
    found: list[str] = []
    n = 0
    while len(found) < count:
        candidate = f"{prefix}{n}"
        if (zlib.crc32(candidate.encode()) % 2 == 1) == odd:
            found.append(candidate)
        n += 1
    return found


class TestRegisterLabels:
    def test_a_report_half_read_in_part_is_mixed(self) -> None:
        for path in (
            "data/eval/squad2/dev.json",
            "data/eval/hotpotqa/dev.jsonl",
            "data/eval/scifact",
        ):
            label = tuning_of(Path(path)).half_label("report")
            assert label.startswith("odd crc32, mixed: its items 1–150 were read"), path
            assert "never tuned" not in label

    def test_hotpotqa_comparison_questions_are_read_in_both_halves(self) -> None:
        tuning = tuning_of(Path("data/eval/hotpotqa/dev.jsonl"))
        assert "comparison questions were read" in tuning.half_label("report")
        assert tuning.half_label("clean") == "odd crc32, item 151 on, not comparison: never tuned"

    def test_scifact_clean_subset_says_its_retrieval_defaults_were_chosen_on_it(self) -> None:
        label = tuning_of(Path("data/eval/scifact")).half_label("clean")
        assert label.startswith("odd crc32, item 151 on: mixed; never tuned for answering")
        assert "retrieval defaults" in label

    def test_the_clean_subset_without_near_twins(self) -> None:
        label = tuning_of(Path("data/eval/squad2/dev.json")).half_label("clean_no_twin")
        assert label == (
            "odd crc32, item 151 on, no near-twin of a read question (Jaccard ≥ 0.7): never tuned"
        )

    def test_the_clean_subset_without_shared_sources(self) -> None:
        label = tuning_of(Path("data/eval/scifact")).half_label("clean_unshared")
        assert label.startswith(
            "odd crc32, item 151 on, no near-twin of a read question and no source document "
            "shared with one: mixed; never tuned for answering"
        )

    def test_a_split_set_read_nowhere_else_keeps_never_tuned(self) -> None:
        tuning = tuning_of(Path("data/golden/ipc_statements_v1.jsonl"))
        assert tuning.half_label("report") == "odd crc32, never tuned"
        assert not tuning.has_clean

    def test_the_tune_half(self) -> None:
        assert tuning_of(Path("data/eval/squad2/dev.json")).half_label("tune") == (
            "even crc32, tuned"
        )

    def test_plain_ipc_v1_carries_its_caveats(self) -> None:
        tuning = tuning_of(Path("data/golden/ipc_plain_v1.jsonl"))
        assert tuning.label == "never tuned"
        assert "38 of its 206" in tuning.note and "issue 13" in tuning.note


class TestCleanSubset:
    TUNING = Tuning("mixed", "test", split=True, read_first=4, read_subsets=("cmp",), read_span=12)

    def _items(self) -> list[EvalItem]:
        # 12 items in file order: odd/even crc32 alternate; one odd item past position 4 is "cmp".
        odd, even = _ids(True, 6), _ids(False, 6)
        ids = [x for pair in zip(odd, even, strict=True) for x in pair]
        return [
            EvalItem(
                item_id,
                f"question number {n} about topic {n}",
                True,
                source_docs=(f"doc{n}",),
                subset="cmp" if n == 8 else "",
            )
            for n, item_id in enumerate(ids)
        ]

    def test_membership_is_odd_crc32_past_the_read_items_and_not_a_read_subset(self) -> None:
        items = self._items()
        found = clean_subset(self.TUNING, items)
        assert found is not None
        expected = {
            item.item_id
            for n, item in enumerate(items)
            if not in_tune_half(item.item_id) and n >= 4 and n != 8
        }
        assert found.ids == expected and len(expected) == 3
        # Read: the tune half (6), the odd items among the first 4 (2) and the comparison (1).
        assert found.n_read == 9

    def test_a_near_twin_of_a_read_question_is_flagged(self) -> None:
        items = self._items()
        clean_id = sorted(clean_subset(self.TUNING, items).ids)[0]  # type: ignore[union-attr]
        index = next(n for n, i in enumerate(items) if i.item_id == clean_id)
        # A one-word edit of the first (read) question: Jaccard 6/8 >= 0.7.
        items[index] = EvalItem(clean_id, "question number 0 about topic zero", False)
        found = clean_subset(self.TUNING, items)
        assert found is not None and found.twin_ids == {clean_id}
        assert clean_id not in found.no_twin_ids
        assert found.counts()["twin"] == 1
        assert clean_id not in found.unshared_ids

    def test_a_shared_source_document_is_counted(self) -> None:
        items = self._items()
        clean_id = sorted(clean_subset(self.TUNING, items).ids)[0]  # type: ignore[union-attr]
        index = next(n for n, i in enumerate(items) if i.item_id == clean_id)
        items[index] = EvalItem(clean_id, "something else entirely", True, source_docs=("doc1",))
        found = clean_subset(self.TUNING, items)
        assert found is not None and found.shared_source_ids == {clean_id}
        assert found.twin_ids == frozenset()
        assert clean_id in found.no_twin_ids and clean_id not in found.unshared_ids

    def test_a_set_without_a_clean_subset(self) -> None:
        assert (
            clean_subset(tuning_of(Path("data/golden/ipc_plain_v1.jsonl")), self._items()) is None
        )

    def test_jaccard(self) -> None:
        assert jaccard(question_words("A b c"), question_words("a b d")) == pytest.approx(0.5)
        assert jaccard(frozenset(), frozenset()) == 0.0


class TestHarnessScoresTheCleanSubset:
    """A SQuAD-registered run of 160 items: 150 read first, then 10 of which the odd are clean."""

    def _run(self, tmp_path: Path) -> tuple[list[EvalItem], list[Outcome], RunInfo]:
        ids = [f"q{n}" for n in range(160)]
        items = [
            EvalItem(
                item_id,
                f"unanswerable question {n} on its own words w{n} x{n} y{n}",
                False,
                source_docs=(f"p{n}",),
            )
            for n, item_id in enumerate(ids)
        ]
        # Every clean (odd, position >= 150) item is refused; every other item answered.
        tuning = tuning_of(SQUAD)
        outcomes = [
            Outcome.from_answer(i.item_id, REFUSAL)
            if tuning.in_clean(n, i.item_id, i.subset)
            else Outcome.from_answer(i.item_id, "An answer.")
            for n, i in enumerate(items)
        ]
        run = RunInfo(
            dataset="squad2",
            data_path=str(SQUAD),
            inputs=(InputFile(str(SQUAD), "ab" * 32, 1),),
            corpus_checksum="cd" * 32,
            n_total=549,
            limit=160,
            command="python -m evaluation --dataset squad2 --limit 160",
            started_at="2026-11-27T00:00:00+00:00",
            tuning="mixed",
            tuning_note="n",
        )
        return items, outcomes, run

    def test_the_clean_subset_is_scored_and_labelled(self, tmp_path: Path) -> None:
        items, outcomes, run = self._run(tmp_path)
        clean = clean_subset(tuning_of(SQUAD), items)
        assert clean is not None
        n_clean = len(clean.ids)
        assert 0 < n_clean < MIN_ITEMS
        report = score_run(
            items, outcomes, bootstrap=FAST, run=run, tune_half=in_tune_half, clean=clean
        )
        refused = report.halves["clean"]["correct_refusal_rate"]
        assert (refused.value, refused.n, refused.ci_method) == (1.0, n_clean, "wilson")
        assert report.halves["report"]["correct_refusal_rate"].value < 1.0
        assert report.clean_counts["clean"] == n_clean
        files = write_report(report, tmp_path, plots=False)
        markdown = files.markdown.read_text()
        assert "## Clean subset (odd crc32, item 151 on: never tuned)" in markdown
        assert f"Of the {n_clean} clean items, 0 have a near-twin" in markdown
        # Fewer than 30 left without twins: no separate table.
        assert "## Clean subset without near-twins" not in markdown
        assert "not scored apart" in markdown
        assert json.loads(files.json.read_text())["halves"]["clean"]
        line = clean_summary(report)
        assert line is not None
        assert line.startswith(
            f"squad2 clean subset (odd crc32, item 151 on: never tuned): {n_clean}"
        )
        assert f"correct refusal 1.000 ({refused.ci_low:.3f}–1.000)" in line

    def test_the_summary_gives_the_clean_row_first(self, tmp_path: Path) -> None:
        items, outcomes, run = self._run(tmp_path)
        report = score_run(
            items,
            outcomes,
            bootstrap=FAST,
            run=run,
            tune_half=in_tune_half,
            clean=clean_subset(tuning_of(SQUAD), items),
        )
        doc = tmp_path / "E.md"
        doc.write_text("<!-- eval-summary:start -->\n<!-- eval-summary:end -->\n")
        update_summary(doc, report)
        text = doc.read_text()
        assert "| squad2 | clean (odd crc32, item 151 on: never tuned) |" in text
        assert text.index("| squad2 | clean") < text.index("| squad2 | report (odd crc32, mixed")
        assert "squad2: of " in text and "near-twin" in text

    def test_a_run_past_the_read_span_says_so(self, tmp_path: Path) -> None:
        items, outcomes, run = self._run(tmp_path)
        more = [EvalItem(f"z{n}", f"late question {n}", False) for n in range(150)]
        items += more
        outcomes += [Outcome.from_answer(i.item_id, REFUSAL) for i in more]
        report = score_run(items, outcomes, bootstrap=FAST, run=run, tune_half=in_tune_half)
        markdown = write_report(report, tmp_path, plots=False).markdown.read_text()
        assert "This run goes past item 300" in markdown

    def test_a_stored_report_rebuilds_the_same_figures(self, tmp_path: Path) -> None:
        items, outcomes, run = self._run(tmp_path)
        items[0] = EvalItem("q0", "q", True, gold=(GoldEvidence("D", "Some text."),))
        clean = clean_subset(tuning_of(SQUAD), items)
        report = score_run(
            items, outcomes, bootstrap=FAST, run=run, tune_half=in_tune_half, clean=clean
        )
        stored = json.loads(json.dumps(report.to_dict()))
        scores = [item_score_from_dict(i) for i in stored["items"]]
        # No outcome reported retrieved passages: the stored report says so (n 0 at recall@10).
        assert stored["metrics"]["retrieval_doc_recall@10"]["n"] == 0
        again = build_report(
            scores,
            bootstrap=FAST,
            run=run,
            retrieval_reported=False,
            tune_half=in_tune_half,
            clean=clean,
        )
        assert again.to_dict()["metrics"] == report.to_dict()["metrics"]
        assert again.halves == report.halves


class TestRescoreAndPaired:
    def test_a_stored_squad_run_is_rescored_to_the_same_parts(self, tmp_path: Path) -> None:
        from evaluation.datasets import load_dataset, run_info
        from evaluation.rescore import rescore

        dataset = load_dataset("squad2", SQUAD, limit=160)
        outcomes = [Outcome.from_answer(i.item_id, REFUSAL) for i in dataset.items]
        clean = clean_subset(tuning_of(SQUAD), dataset.items)
        assert clean is not None and len(clean.ids) > 0
        report = score_run(
            dataset.items,
            outcomes,
            bootstrap=FAST,
            run=run_info(dataset, data_path=SQUAD, command="test"),
            tune_half=in_tune_half,
            clean=clean,
        )
        files = write_report(report, tmp_path, plots=False)
        again, stored = rescore(files.json)
        assert again.halves == report.halves
        assert again.clean_counts == report.clean_counts
        assert stored["run"]["command"] == "test"

    def test_paired_counts_changed_items_only(self) -> None:
        from evaluation.paired import paired

        def item(item_id: str, answerable: bool, status: str) -> dict[str, object]:
            return {
                "item_id": item_id,
                "answerable": answerable,
                "status": status,
                "gold_size": 0,
                "cites_gold_doc": False,
            }

        before = [
            item("a", False, "answered"),
            item("b", False, "refused"),
            item("c", True, "answered"),
        ]
        after = [
            item("a", False, "refused"),
            item("b", False, "refused"),
            item("c", True, "answered"),
        ]
        results = paired(before, after, {"a", "b", "c"})
        refusal = results["correct refusal"]
        assert (refusal.before, refusal.after, refusal.gained, refusal.lost) == (1, 2, 1, 0)
        assert results["false refusal"].p_value == 1.0
        with pytest.raises(ValueError, match="same items"):
            paired(before, after[:2], {"a", "b", "c"})


class TestWhichPartsAreShown:
    @staticmethod
    def _report(twins: int, shared: int) -> str:
        from evaluation.clean import CleanSubset

        ids = [f"c{n}" for n in range(40)]
        items = [EvalItem(i, "q", False) for i in ids]
        outcomes = [Outcome.from_answer(i, REFUSAL) for i in ids]
        clean = CleanSubset(
            ids=frozenset(ids),
            twin_ids=frozenset(ids[:twins]),
            shared_source_ids=frozenset(ids[:shared]),
            n_read=10,
        )
        run = RunInfo("squad2", str(SQUAD), (), "c", 549, 300, "cmd", "t")
        report = score_run(items, outcomes, bootstrap=FAST, run=run, clean=clean)
        return report_markdown(report)

    def test_a_part_equal_to_the_one_before_is_not_repeated(self) -> None:
        text = self._report(twins=0, shared=0)
        assert "## Clean subset (" in text
        assert "without near-twins" not in text.replace("Without the near-twins", "")

    def test_parts_that_leave_items_out_are_shown_while_30_remain(self) -> None:
        text = self._report(twins=5, shared=5)
        assert "## Clean subset without near-twins (" in text
        assert "## Clean subset without near-twins or shared sources" not in text  # same items
        text = self._report(twins=5, shared=12)
        assert "## Clean subset without near-twins or shared sources" not in text  # 28 left
        assert "Without both, 28 items remain, under 30: not scored apart." in text
        text = self._report(twins=2, shared=8)
        assert "## Clean subset without near-twins or shared sources (" in text


class TestAnswerabilityAblationLabels:
    def test_split_sets_are_given_by_half_with_the_registers_labels(self) -> None:
        from bench.answerability_ablation import SETS

        labels = {row[0]: row[4] for row in SETS}
        assert labels["SciFact, report half"].startswith("odd crc32, mixed")
        assert labels["HotpotQA, report half"].startswith("odd crc32, mixed")
        assert labels["SQuAD 2.0, clean subset"] == "odd crc32, item 151 on: never tuned"
        assert not any("not used for thresholds" in label for label in labels.values())
        assert all(any(word in label for word in ("tuned", "mixed")) for label in labels.values())

    def test_the_clean_subset_is_chosen_by_position(self, tmp_path: Path) -> None:
        from bench.answerability_ablation import figures

        ids = [f"q{n}" for n in range(160)]
        items = [
            {
                "item_id": i,
                "subset": "",
                "answerable": False,
                "status": "refused",
                "gold_size": 0,
                "cites_gold_doc": False,
                "gold_hit": 0,
                "n_supporting": 0,
                "n_citations": 0,
            }
            for i in ids
        ]
        report = {
            "run": {"data_path": str(SQUAD)},
            "items": items,
            "metrics": {"latency_total_p50_ms": {"value": 1.0}},
        }
        path = tmp_path / "report.json"
        path.write_text(json.dumps(report))
        expected = sum(1 for n, i in enumerate(ids) if n >= 150 and not in_tune_half(i))
        assert figures(path, "clean")["n"] == expected
        assert figures(path, "odd")["n"] == sum(1 for i in ids if not in_tune_half(i))

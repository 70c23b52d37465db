"""The shipped IPC golden set validates and agrees with the corpus; the loader names bad lines."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evaluation.golden import (
    IpcSection,
    check_against_corpus,
    load_golden,
    load_ipc_sections,
)
from services.common.errors import CorpusFormatError
from services.common.intent import Intent

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "data/golden/ipc_golden_v1.jsonl"
PLAIN = ROOT / "data/golden/ipc_plain_v1.jsonl"
TUNE = ROOT / "data/golden/ipc_plain_tune_v1.jsonl"
STATEMENTS = ROOT / "data/golden/ipc_statements_v1.jsonl"
MULTIPART = ROOT / "data/golden/ipc_multipart_v1.jsonl"
IPC = ROOT / "data/corpora/indian_law/ipc.json"


def _answerable(**overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "ipc-001",
        "question": "What is theft?",
        "answerable": True,
        "intent": "definition",
        "gold_doc_ids": ["IPC_378"],
        "key_sentences": ["is said to commit theft."],
        "answer_contains": ["theft"],
        "rationale": "s.378.",
    }
    record.update(overrides)
    return record


def _unanswerable(**overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "ipc-002",
        "question": "What is the capital of France?",
        "answerable": False,
        "intent": "general",
        "gold_doc_ids": [],
        "key_sentences": [],
        "absent_terms": ["Paris"],
        "rationale": "Off-topic.",
    }
    record.update(overrides)
    return record


def _write(tmp_path: Path, *records: dict[str, Any] | str) -> Path:
    path = tmp_path / "golden.jsonl"
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _sections() -> dict[str, IpcSection]:
    text = "Whoever moves property dishonestly is said to commit theft."
    return {"IPC_378": IpcSection("IPC_378", "378", "Theft", text, 17, "theft")}


class TestShippedGolden:
    def test_load_golden_shipped_file_meets_size_targets(self) -> None:
        items = load_golden(GOLDEN)
        answerable = [i for i in items if i.answerable]
        assert len(answerable) >= 60
        assert len(items) - len(answerable) >= 20
        assert {i.intent for i in answerable} == set(Intent)

    def test_load_golden_shipped_file_has_multi_section_questions(self) -> None:
        multi = [i for i in load_golden(GOLDEN) if len(i.gold_doc_ids) > 1]
        assert len(multi) >= 8

    def test_check_against_corpus_shipped_file_matches_corpus(self) -> None:
        assert check_against_corpus(load_golden(GOLDEN), load_ipc_sections(IPC)) == []

    def test_plain_language_set_loads_and_matches_corpus(self) -> None:
        items = load_golden(PLAIN)
        answerable = [i for i in items if i.answerable]
        assert len(answerable) >= 80 and len(items) - len(answerable) >= 30
        assert check_against_corpus(items, load_ipc_sections(IPC)) == []

    def test_plain_tune_set_loads_and_matches_corpus(self) -> None:
        items = load_golden(TUNE)
        answerable = [i for i in items if i.answerable]
        assert len(answerable) >= 80 and len(items) - len(answerable) >= 30
        assert len({d for i in answerable for d in i.gold_doc_ids}) >= 60
        assert check_against_corpus(items, load_ipc_sections(IPC)) == []

    def test_multipart_set_loads_matches_corpus_and_keeps_its_own_ids(self) -> None:
        items = load_golden(MULTIPART)
        answerable = [i for i in items if i.answerable]
        assert (len(items), len(answerable)) == (70, 57)
        # nearly every answerable question needs several sections (a few ask two things of
        # one section, which both defines and punishes)
        assert sum(len(i.gold_doc_ids) >= 2 for i in answerable) == 51
        assert check_against_corpus(items, load_ipc_sections(IPC)) == []
        others = [GOLDEN, PLAIN, TUNE, STATEMENTS]
        taken = {i.id for path in others for i in load_golden(path)}
        assert not taken & {i.id for i in items}

    def test_plain_tune_set_ids_do_not_reuse_golden_ids(self) -> None:
        # The tune set's ids are ipc-501 on (the loader accepts ipc-NNN and plain-NNN only),
        # so they must stay clear of ipc_golden_v1's ipc-001..ipc-112.
        golden_ids = {i.id for i in load_golden(GOLDEN)}
        assert not golden_ids & {i.id for i in load_golden(TUNE)}

    def test_statement_set_loads_matches_corpus_and_keeps_its_own_ids(self) -> None:
        items = load_golden(STATEMENTS)
        kinds = Counter(i.rationale.split(":")[0] for i in items)
        assert kinds == {"TRUE": 60, "FALSE": 45, "NOT-IN-IPC": 45}
        # True and false statements are answerable: their section decides them.
        assert all(
            i.answerable == (k != "NOT-IN-IPC") for i in items for k in [i.rationale.split(":")[0]]
        )
        assert check_against_corpus(items, load_ipc_sections(IPC)) == []
        others = {i.id for path in (GOLDEN, TUNE) for i in load_golden(path)}
        assert not others & {i.id for i in items}


class TestLoadGolden:
    def test_load_golden_valid_records_parse(self, tmp_path: Path) -> None:
        items = load_golden(_write(tmp_path, _answerable(), _unanswerable()))
        assert [i.id for i in items] == ["ipc-001", "ipc-002"]
        assert items[0].intent is Intent.DEFINITION
        assert items[1].absent_terms == ("Paris",)
        assert items[1].line == 2

    @pytest.mark.parametrize(
        ("record", "problem"),
        [
            (_answerable(intent="opinion"), "intent 'opinion'"),
            (_answerable(id="IPC-1"), "does not match ipc-NNN"),
            (_answerable(answerable="yes"), "'answerable' must be a bool"),
            (_answerable(extra=1), "unknown field(s) extra"),
            (_answerable(key_sentences=[]), "needs gold_doc_ids and key_sentences"),
            (_answerable(gold_doc_ids=["378"]), "do not match IPC_<section>"),
            (_answerable(key_sentences=[""]), "non-empty strings"),
            (_unanswerable(gold_doc_ids=["IPC_1"]), "has no gold docs"),
            (_unanswerable(absent_terms=[]), "needs absent_terms"),
        ],
    )
    def test_load_golden_bad_record_names_line(
        self, tmp_path: Path, record: dict[str, Any], problem: str
    ) -> None:
        path = _write(tmp_path, _unanswerable(id="ipc-009"), record)
        with pytest.raises(CorpusFormatError) as caught:
            load_golden(path)
        assert f"{path}:2:" in str(caught.value)
        assert problem in str(caught.value)
        assert caught.value.metadata["line"] == "2"

    def test_load_golden_missing_field_is_named(self, tmp_path: Path) -> None:
        record = _answerable()
        del record["rationale"]
        with pytest.raises(CorpusFormatError, match=r":1: missing field\(s\) rationale"):
            load_golden(_write(tmp_path, record))

    def test_load_golden_invalid_json_names_line(self, tmp_path: Path) -> None:
        with pytest.raises(CorpusFormatError, match=r":2: invalid JSON"):
            load_golden(_write(tmp_path, _answerable(), "{not json"))

    def test_load_golden_duplicate_id_names_both_lines(self, tmp_path: Path) -> None:
        with pytest.raises(
            CorpusFormatError, match=r":2: duplicate id ipc-001 \(first on line 1\)"
        ):
            load_golden(_write(tmp_path, _answerable(), _answerable()))

    def test_load_golden_empty_file_is_rejected(self, tmp_path: Path) -> None:
        path = tmp_path / "empty.jsonl"
        path.write_text("\n", encoding="utf-8")
        with pytest.raises(CorpusFormatError, match="empty"):
            load_golden(path)


class TestCheckAgainstCorpus:
    def test_check_against_corpus_consistent_item_has_no_problem(self, tmp_path: Path) -> None:
        items = load_golden(_write(tmp_path, _answerable(), _unanswerable()))
        assert check_against_corpus(items, _sections()) == []

    def test_check_against_corpus_whitespace_differences_are_ignored(self, tmp_path: Path) -> None:
        items = load_golden(_write(tmp_path, _answerable(key_sentences=["said  to\ncommit theft"])))
        assert check_against_corpus(items, _sections()) == []

    @pytest.mark.parametrize(
        ("record", "problem"),
        [
            (_answerable(key_sentences=["commits robbery"]), "key sentence not found"),
            (_answerable(gold_doc_ids=["IPC_378", "IPC_999"]), "IPC_999 is not in the corpus"),
            (_answerable(answer_contains=["ten years"]), "'ten years' is not in the key"),
            (_unanswerable(absent_terms=["THEFT"]), "absent term 'THEFT' occurs"),
        ],
    )
    def test_check_against_corpus_reports_disagreement(
        self, tmp_path: Path, record: dict[str, Any], problem: str
    ) -> None:
        problems = check_against_corpus(load_golden(_write(tmp_path, record)), _sections())
        assert any(problem in p for p in problems), problems

    def test_check_against_corpus_gold_copied_with_a_footnote_marker_matches(
        self, tmp_path: Path
    ) -> None:
        # Audit L2: gold copied from the file ("trafficking1") is read as the corpus is served.
        record = _answerable(
            gold_doc_ids=["IPC_370"],
            key_sentences=["commits the offence of trafficking1."],
            answer_contains=["trafficking1"],
        )
        items = load_golden(_write(tmp_path, record))
        assert items[0].key_sentences == ("commits the offence of trafficking.",)
        assert items[0].answer_contains == ("trafficking",)
        assert check_against_corpus(items, load_ipc_sections(IPC)) == []

    def test_check_against_corpus_absent_term_respects_word_bounds(self, tmp_path: Path) -> None:
        items = load_golden(_write(tmp_path, _unanswerable(absent_terms=["prop"])))
        assert check_against_corpus(items, _sections()) == []


class TestLoadIpcSections:
    def test_load_ipc_sections_lettered_sections_keep_their_letter(self) -> None:
        sections = load_ipc_sections(IPC)
        assert len(sections) == 575
        assert sections["IPC_498A"].title.startswith("Husband or relative")
        assert sections["IPC_304B"].text == ""

    def test_load_ipc_sections_text_is_served_without_footnote_markers(self) -> None:
        sections = load_ipc_sections(IPC)
        assert sections["IPC_509"].text.endswith("and also with fine.")
        assert "trafficking1" not in sections["IPC_370"].text

    def test_load_ipc_sections_bad_record_is_named(self, tmp_path: Path) -> None:
        path = tmp_path / "ipc.json"
        path.write_text(json.dumps([{"Section": 1}]), encoding="utf-8")
        with pytest.raises(CorpusFormatError, match="record 0"):
            load_ipc_sections(path)

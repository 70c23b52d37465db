"""Each dataset adapter on a tiny sample written in that dataset's own published format."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from evaluation.datasets import (
    DEFAULT_PATHS,
    load_dataset,
    load_hotpotqa,
    load_ipc,
    load_scifact,
    load_squad2,
    missing_gold_text,
    run_info,
    safe_id,
    tuning_of,
)
from evaluation.records import GoldEvidence
from services.common.errors import CorpusFormatError

SQUAD_CONTEXT = (
    "The Normans were the people who gave their name to Normandy, a region in France. "
    "They were descended from Norse raiders."
)


def _squad(tmp_path: Path, context: str = SQUAD_CONTEXT) -> Path:
    data = {
        "version": "v2.0",
        "data": [
            {
                "title": "Normans",
                "paragraphs": [
                    {
                        "context": context,
                        "qas": [
                            {
                                "id": "q1",
                                "question": "In what country is Normandy located?",
                                "answers": [
                                    {"text": "France", "answer_start": 74},
                                    {"text": "France", "answer_start": 74},
                                ],
                                "is_impossible": False,
                            },
                            {
                                "id": "q2",
                                "question": "Who descended from the Normans?",
                                "answers": [],
                                "plausible_answers": [{"text": "Norse", "answer_start": 106}],
                                "is_impossible": True,
                            },
                        ],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _hotpot_record(qid: str, para_b: list[str]) -> dict[str, Any]:
    return {
        "id": qid,
        "question": "Which city did the band first play in?",
        "answer": "Tulsa",
        "type": "bridge",
        "level": "hard",
        "supporting_facts": {
            "title": ["Tinted Windows (album)", "Tinted Windows (band)"],
            "sent_id": [0, 1],
        },
        "context": {
            "title": ["Tinted Windows (album)", "Tinted Windows (band)", "Café Noir"],
            "sentences": [
                ["Tinted Windows is the debut album of Tinted Windows.", " It came out in 2010."],
                para_b,
                ["Café Noir is a film.", " It is French."],
            ],
        },
    }


def _hotpot(tmp_path: Path, *records: dict[str, Any]) -> Path:
    path = tmp_path / "dev.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _scifact(tmp_path: Path, *, with_nei: bool = True) -> Path:
    corpus = [
        {
            "doc_id": 11,
            "title": "A study.",
            "abstract": ["S zero.", "S one.", "S two."],
            "structured": False,
        },
        {"doc_id": 22, "title": "B study.", "abstract": ["T zero.", "T one."], "structured": True},
    ]
    claims = [
        {
            "id": 5,
            "claim": "Claim five holds.",
            "evidence": {
                "11": [
                    {"sentences": [0, 2], "label": "SUPPORT"},
                    {"sentences": [1], "label": "SUPPORT"},
                ]
            },
            "cited_doc_ids": [11],
        },
        {
            "id": 9,
            "claim": "Claim nine holds.",
            "evidence": {"22": [{"sentences": [1], "label": "CONTRADICT"}]},
            "cited_doc_ids": [22],
        },
    ]
    nei = [{"id": 7, "claim": "Claim seven holds.", "evidence": {}, "cited_doc_ids": [22]}]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (tmp_path / "claims.jsonl").write_text("".join(json.dumps(r) + "\n" for r in claims))
    if with_nei:
        (tmp_path / "claims_nei.jsonl").write_text("".join(json.dumps(r) + "\n" for r in nei))
    return tmp_path


def _ipc(tmp_path: Path) -> tuple[Path, Path]:
    sections = [
        {
            "chapter": 17,
            "chapter_title": "theft",
            "Section": 378,
            "section_title": "Theft",
            "section_desc": "Whoever moves property dishonestly\nis said to commit theft.",
        },
        {
            "chapter": 17,
            "chapter_title": "theft",
            "Section": 379,
            "section_title": "Punishment for theft",
            "section_desc": (
                "Whoever commits theft shall be punished with imprisonment for three years."
            ),
        },
        {
            "chapter": 16,
            "chapter_title": "homicide",
            "Section": "304B",
            "section_title": "Dowry death",
            "section_desc": "",
        },
    ]
    golden = [
        {
            "id": "ipc-001",
            "question": "What is theft and how is it punished?",
            "answerable": True,
            "intent": "punishment",
            "gold_doc_ids": ["IPC_378", "IPC_379"],
            "key_sentences": [
                "Whoever moves property dishonestly is said to commit theft.",
                "shall be punished with imprisonment for three years",
            ],
            "answer_contains": ["three years"],
            "rationale": "s.378 and s.379.",
        },
        {
            "id": "ipc-002",
            "question": "What is the capital of France?",
            "answerable": False,
            "intent": "general",
            "gold_doc_ids": [],
            "key_sentences": [],
            "absent_terms": ["Paris"],
            "rationale": "Off-topic.",
        },
    ]
    corpus = tmp_path / "ipc.json"
    corpus.write_text(json.dumps(sections), encoding="utf-8")
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in golden), encoding="utf-8")
    return path, corpus


class TestSquad2:
    def test_load_squad2_paragraph_becomes_doc_and_answer_sentence_gold(
        self, tmp_path: Path
    ) -> None:
        ds = load_squad2(_squad(tmp_path))
        assert [d.doc_id for d in ds.docs] == ["Normans_p0"]
        assert ds.docs[0].text == SQUAD_CONTEXT
        answerable, impossible = ds.items
        assert answerable.answerable and not impossible.answerable
        assert answerable.gold == (
            GoldEvidence(
                "Normans_p0",
                "The Normans were the people who gave their name to Normandy, a region in France.",
            ),
        )
        assert answerable.gold_answers == ("France",)
        assert impossible.gold == () and impossible.gold_answers == ()
        assert missing_gold_text(ds) == []

    def test_load_squad2_limit_keeps_corpus(self, tmp_path: Path) -> None:
        ds = load_squad2(_squad(tmp_path), limit=1)
        assert [i.item_id for i in ds.items] == ["q1"]
        assert ds.n_total == 2
        assert ds.corpus_checksum == load_squad2(_squad(tmp_path)).corpus_checksum

    def test_load_squad2_checksum_follows_content(self, tmp_path: Path) -> None:
        first = load_squad2(_squad(tmp_path)).corpus_checksum
        assert first == load_squad2(_squad(tmp_path)).corpus_checksum
        changed = load_squad2(_squad(tmp_path, SQUAD_CONTEXT + " More.")).corpus_checksum
        assert changed != first

    def test_load_squad2_records_input_sha256(self, tmp_path: Path) -> None:
        path = _squad(tmp_path)
        (entry,) = load_squad2(path).inputs
        assert entry.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert entry.size_bytes == path.stat().st_size

    def test_load_squad2_wrong_shape_raises_format_error(self, tmp_path: Path) -> None:
        path = tmp_path / "dev.json"
        path.write_text(json.dumps({"data": [{"title": "X"}]}), encoding="utf-8")
        with pytest.raises(CorpusFormatError, match="article 0"):
            load_squad2(path)


class TestHotpotQA:
    def test_load_hotpotqa_docs_are_joined_sentences_and_gold_exact(self, tmp_path: Path) -> None:
        band = ["Tinted Windows is a supergroup.", " Their first show was in Tulsa."]
        ds = load_hotpotqa(_hotpot(tmp_path, _hotpot_record("a", band), _hotpot_record("b", band)))
        docs = {d.doc_id: d for d in ds.docs}
        assert set(docs) == {"Tinted_Windows_album", "Tinted_Windows_band", "Cafe_Noir"}
        assert (
            docs["Tinted_Windows_band"].text
            == "Tinted Windows is a supergroup. Their first show was in Tulsa."
        )
        assert docs["Cafe_Noir"].title == "Café Noir"
        item = ds.items[0]
        assert item.gold == (
            GoldEvidence(
                "Tinted_Windows_album", "Tinted Windows is the debut album of Tinted Windows."
            ),
            GoldEvidence("Tinted_Windows_band", "Their first show was in Tulsa."),
        )
        assert item.gold_answers == ("Tulsa",) and item.subset == "bridge"
        assert missing_gold_text(ds) == []

    def test_load_hotpotqa_differing_paragraph_gets_versioned_doc(self, tmp_path: Path) -> None:
        first = ["Tinted Windows is a supergroup.", " Their first show was in Tulsa."]
        second = ["Tinted Windows is a band.", " Their first show was in Tulsa, Oklahoma."]
        ds = load_hotpotqa(
            _hotpot(tmp_path, _hotpot_record("a", first), _hotpot_record("b", second))
        )
        assert {"Tinted_Windows_band", "Tinted_Windows_band_v2"} <= {d.doc_id for d in ds.docs}
        assert ds.items[1].gold[1] == GoldEvidence(
            "Tinted_Windows_band_v2", "Their first show was in Tulsa, Oklahoma."
        )
        assert missing_gold_text(ds) == []

    def test_load_hotpotqa_whitespace_variant_is_one_doc(self, tmp_path: Path) -> None:
        first = ["Tinted Windows is a supergroup.", " Their first show was in Tulsa."]
        second = ["Tinted Windows is a\u00a0supergroup.", " Their first show was in Tulsa."]
        ds = load_hotpotqa(
            _hotpot(tmp_path, _hotpot_record("a", first), _hotpot_record("b", second))
        )
        assert len(ds.docs) == 3

    def test_load_hotpotqa_bad_line_is_named(self, tmp_path: Path) -> None:
        path = tmp_path / "dev.jsonl"
        path.write_text(json.dumps({"id": "x"}) + "\n", encoding="utf-8")
        with pytest.raises(CorpusFormatError, match=r"dev.jsonl:1: bad context"):
            load_hotpotqa(path)

    def test_safe_id_folds_accents_and_punctuation(self) -> None:
        assert safe_id("Café Noir (film)") == "Cafe_Noir_film"


class TestSciFact:
    def test_load_scifact_support_contradict_and_nei(self, tmp_path: Path) -> None:
        ds = load_scifact(_scifact(tmp_path))
        assert [i.item_id for i in ds.items] == ["5", "7", "9"]  # ordered by claim id
        support, nei, contradict = ds.items
        assert support.subset == "SUPPORT" and support.answerable
        assert support.gold == (
            GoldEvidence("11", "S zero.", 0),
            GoldEvidence("11", "S two.", 0),
            GoldEvidence("11", "S one.", 1),
        )
        assert nei.subset == "NEI" and not nei.answerable and nei.gold == ()
        assert contradict.subset == "CONTRADICT" and contradict.answerable
        assert contradict.gold == (GoldEvidence("22", "T one.", 0),)
        assert ds.docs[0].text == "S zero. S one. S two."
        assert ds.docs[1].metadata == {"structured": "true"}
        assert len(ds.inputs) == 3
        assert missing_gold_text(ds) == []

    def test_load_scifact_nei_file_is_optional(self, tmp_path: Path) -> None:
        ds = load_scifact(_scifact(tmp_path, with_nei=False))
        assert [i.item_id for i in ds.items] == ["5", "9"]

    def test_load_scifact_out_of_range_rationale_is_named(self, tmp_path: Path) -> None:
        root = _scifact(tmp_path)
        bad = {"id": 1, "claim": "c", "evidence": {"22": [{"sentences": [9], "label": "SUPPORT"}]}}
        (root / "claims.jsonl").write_text(json.dumps(bad) + "\n")
        with pytest.raises(CorpusFormatError, match=r"claims.jsonl:1: bad claim"):
            load_scifact(root)


class TestIpc:
    def test_load_ipc_maps_key_sentences_to_their_sections(self, tmp_path: Path) -> None:
        path, corpus = _ipc(tmp_path)
        ds = load_ipc(path, corpus_path=corpus)
        multi, offtopic = ds.items
        assert multi.gold == (
            GoldEvidence("IPC_378", "Whoever moves property dishonestly is said to commit theft."),
            GoldEvidence("IPC_379", "shall be punished with imprisonment for three years"),
        )
        assert multi.answer_match == "all" and multi.gold_answers == ("three years",)
        assert multi.subset == "punishment"
        assert not offtopic.answerable
        assert {d.doc_id for d in ds.docs} == {"IPC_378", "IPC_379", "IPC_304B"}

    def test_load_ipc_corpus_is_the_statutes_file(self, tmp_path: Path) -> None:
        path, corpus = _ipc(tmp_path)
        ds = load_ipc(path, corpus_path=corpus)
        assert ds.corpus_format == "statutes"
        written = ds.write_corpus(tmp_path / "build")
        assert written.read_bytes() == corpus.read_bytes()
        assert ds.ingest_args(written, tmp_path / "idx") == [
            "--format",
            "statutes",
            "--out",
            str(tmp_path / "idx"),
            str(written),
        ]
        assert ds.cache_dir(tmp_path / "var") == tmp_path / "var" / "ipc" / ds.corpus_checksum[:16]

    def test_load_ipc_key_sentence_outside_gold_docs_fails(self, tmp_path: Path) -> None:
        path, corpus = _ipc(tmp_path)
        text = path.read_text().replace(
            '"gold_doc_ids": ["IPC_378", "IPC_379"]', '"gold_doc_ids": ["IPC_378"]'
        )
        path.write_text(text)
        with pytest.raises(CorpusFormatError, match=r"golden.jsonl:1: key sentence"):
            load_ipc(path, corpus_path=corpus)


class TestLoadDataset:
    def test_load_dataset_dispatches_by_name_with_path_and_limit(self, tmp_path: Path) -> None:
        ds = load_dataset("squad2", _squad(tmp_path), limit=1)
        assert ds.name == "squad2" and len(ds.items) == 1

    def test_load_dataset_unknown_name_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="unknown dataset 'mmlu'"):
            load_dataset("mmlu")

    def test_load_dataset_negative_limit_is_rejected(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="limit"):
            load_dataset("squad2", _squad(tmp_path), limit=-1)

    def test_write_corpus_jsonl_lines_are_ingestible_records(self, tmp_path: Path) -> None:
        ds = load_squad2(_squad(tmp_path))
        written = ds.write_corpus(tmp_path / "build")
        records = [json.loads(line) for line in written.read_text().splitlines()]
        assert records == [
            {
                "doc_id": "Normans_p0",
                "title": "Normans",
                "text": SQUAD_CONTEXT,
                "metadata": {"article": "Normans", "paragraph": "0"},
            },
        ]
        assert ds.ingest_args(written, tmp_path / "idx")[:2] == ["--format", "jsonl"]

    def test_run_info_carries_provenance(self, tmp_path: Path) -> None:
        path = _squad(tmp_path)
        ds = load_squad2(path, limit=1)
        info = run_info(ds, data_path=path, command="make eval DATASET=squad2 LIMIT=1")
        assert info.dataset == "squad2" and info.limit == 1 and info.n_total == 2
        assert info.corpus_checksum == ds.corpus_checksum
        assert info.inputs == ds.inputs


class TestTuningRegister:
    @pytest.mark.parametrize(
        ("path", "label", "split"),
        [
            ("data/golden/ipc_golden_v1.jsonl", "tuned", False),
            ("data/golden/ipc_plain_tune_v1.jsonl", "tuned", False),
            ("data/golden/ipc_plain_v1.jsonl", "never tuned", False),
            ("data/golden/ipc_multipart_v1.jsonl", "never tuned", False),
            ("data/golden/ipc_statements_v1.jsonl", "mixed", True),
            ("data/eval/squad2/dev.json", "mixed", True),
            ("data/eval/hotpotqa/dev.jsonl", "mixed", True),
            ("data/eval/scifact", "mixed", True),
            ("/abs/checkout/data/eval/scifact", "mixed", True),
        ],
    )
    def test_every_shipped_set_is_registered(self, path: str, label: str, split: bool) -> None:
        tuning = tuning_of(Path(path))
        assert (tuning.label, tuning.split) == (label, split)
        assert tuning.note

    def test_every_default_path_is_registered(self) -> None:
        assert all(tuning_of(p).label != "unrecorded" for p in DEFAULT_PATHS.values())

    def test_an_unknown_file_is_unrecorded_and_says_why(self) -> None:
        tuning = tuning_of(Path("/tmp/x/mine.jsonl"))
        assert tuning.label == "unrecorded" and not tuning.split
        assert "x/mine.jsonl is not in evaluation/datasets.py" in tuning.note

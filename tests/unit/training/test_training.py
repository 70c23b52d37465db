"""The training pipeline: rule-made statute pairs, the held-back split, batching, and resume.

The resume test trains the real model for a few steps on a few pairs, twice: once straight
through, once stopped half-way and resumed from its checkpoint; the weights must be the same.
"""

from __future__ import annotations

import gzip
import json
import random
import zlib
from pathlib import Path
from typing import Any

import pytest
import torch

from evaluation.stats import paired_difference
from training import statute_pairs
from training.build_data import split_heldback
from training.heldback_accuracy import main as heldback
from training.train_entailment import bucketed_batches, data_labels
from training.train_entailment import main as train

S379 = (
    "Whoever commits theft shall be punished with imprisonment of either description for a term "
    "which may extend to three years, or with fine, or with both."
)
DATA = Path(__file__).resolve().parents[3] / "training" / "data" / "entailment"


class TestStatutePairs:
    def test_contradictions_change_what_the_penalty_says(self) -> None:
        made: dict[str, list[str]] = {}
        for hypothesis, rule in statute_pairs.contradictions(S379, random.Random(1)):
            made.setdefault(rule, []).append(hypothesis)
        assert "shall not be less than three years" in made["bound_min"][0]
        assert "exactly three years" in made["bound_exact"][0]
        assert any("and with fine" in h for h in made["or_and"])
        assert "three years" not in made["term"][0]

    def test_generate_is_deterministic_and_labelled(self) -> None:
        section = statute_pairs.Section("IPC_379", "Punishment for theft", (S379,))
        first = statute_pairs.generate([section, section], seed=7)
        again = statute_pairs.generate([section, section], seed=7)
        assert first == again
        assert {p.label for p in first} <= {"entailment", "neutral", "contradiction"}
        assert any(p.label == "contradiction" for p in first)
        assert all(p.source.startswith("ipc_rules:") for p in first)

    def test_offence_phrase_reads_the_title(self) -> None:
        assert statute_pairs.offence_phrase("Punishment for theft") == "theft"


class TestData:
    def test_heldback_split_is_balanced_and_disjoint(self) -> None:
        rows = [
            {"premise": f"p{i}", "hypothesis": "h", "label": label, "source": "s"}
            for i, label in enumerate(["entailment", "neutral", "contradiction"] * 10)
        ]
        train, held = split_heldback(rows, 3, random.Random(0))
        assert len(held) == 9 and len(train) == 21
        assert {r["label"] for r in held} == {"entailment", "neutral", "contradiction"}
        assert not {r["premise"] for r in held} & {r["premise"] for r in train}

    def test_vendored_heldback_pairs_are_not_trained_on(self) -> None:
        from training.train_entailment import read_pairs, training_file

        def pairs(path: Path) -> set[tuple[str, str]]:
            return {(r["premise"], r["hypothesis"]) for r in read_pairs(path)}

        assert training_file(DATA).name == "train.jsonl.xz"
        assert not pairs(DATA / "heldback.jsonl.gz") & pairs(training_file(DATA))

    def test_bucketed_batches_cover_every_pair_once(self) -> None:
        lengths = [random.Random(i).randint(5, 200) for i in range(500)]
        batches = bucketed_batches(lengths, 32, random.Random(3))
        assert sorted(i for b in batches for i in b) == list(range(500))
        assert all(len(b) <= 32 for b in batches)


@pytest.mark.slow
class TestResume:
    def test_training_resumed_from_a_checkpoint_matches_an_unbroken_run(
        self, tmp_path: Path
    ) -> None:
        common = [
            "--data", str(DATA), "--limit", "48", "--batch-size", "16", "--epochs", "1",
            "--heldback-limit", "6", "--checkpoint-every", "1", "--threads", "1",
        ]  # fmt: skip
        train([*common, "--out", str(tmp_path / "straight")])
        train([*common, "--out", str(tmp_path / "resumed"), "--max-steps", "2"])
        assert not (tmp_path / "resumed" / "final").exists()
        train([*common, "--out", str(tmp_path / "resumed")])

        log = (tmp_path / "resumed" / "train.log").read_text()
        assert "resumed from" in log and "at step 2" in log
        straight = torch.load(tmp_path / "straight" / "checkpoint.pt", weights_only=False)
        resumed = torch.load(tmp_path / "resumed" / "checkpoint.pt", weights_only=False)
        assert straight["state"]["step"] == resumed["state"]["step"] == 3
        for name, tensor in straight["model"].items():
            assert torch.allclose(tensor, resumed["model"][name], atol=1e-6), name
        summary = json.loads((tmp_path / "resumed" / "final" / "training.json").read_text())
        assert summary["steps"] == 3 and 0.0 <= summary["heldback_accuracy"] <= 1.0


@pytest.mark.slow
def test_a_model_trained_on_fewer_layers_keeps_them_through_export(tmp_path: Path) -> None:
    """--layers N keeps the base's first N layers; the exporter rebuilds that shape from a
    checkpoint (a run cut short on the device is exported from its checkpoint)."""
    from transformers import AutoConfig

    from training.export_onnx import load_model

    train([
        "--data", str(DATA), "--limit", "32", "--batch-size", "16", "--epochs", "1",
        "--heldback-limit", "4", "--threads", "1", "--layers", "2", "--out", str(tmp_path),
    ])  # fmt: skip
    assert AutoConfig.from_pretrained(str(tmp_path / "final")).num_hidden_layers == 2
    labels = tuple(data_labels(DATA))
    model = load_model(None, tmp_path / "checkpoint.pt", labels)
    assert model.config.num_hidden_layers == 2 and len(model.bert.encoder.layer) == 2


class TestDistillation:
    def test_the_loss_is_cross_entropy_at_alpha_zero_and_zero_when_the_student_is_the_teacher(
        self,
    ) -> None:
        from training.train_entailment import distillation_loss

        student = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]])
        target = torch.tensor([0, 2])
        ce = torch.nn.functional.cross_entropy(student, target)
        assert torch.isclose(distillation_loss(student, student * 7, target, 0.0, 2.0), ce)
        assert distillation_loss(student, student, target, 1.0, 2.0).abs() < 1e-6
        # A teacher that disagrees with the student costs the student at alpha 1.
        assert distillation_loss(student, -student, target, 1.0, 2.0) > 0.1

    def test_a_teacher_file_of_other_data_stops_training(self, tmp_path: Path) -> None:
        import numpy as np

        from training.teacher_logits import check_teacher

        path = tmp_path / "t.npz"
        meta = {"train_sha256": "abc", "labels": ["entailment", "neutral", "contradiction"]}
        np.savez(path, logits=np.zeros((4, 3), dtype=np.float32), meta=json.dumps(meta))
        labels = meta["labels"]
        assert check_teacher(path, "abc", 4, labels).shape == (4, 3)
        with pytest.raises(SystemExit, match="sha256 abc, not def"):
            check_teacher(path, "def", 4, labels)
        with pytest.raises(SystemExit, match="shape"):
            check_teacher(path, "abc", 5, labels)

    @pytest.mark.slow
    def test_a_distilled_run_trains_and_records_its_teacher(self, tmp_path: Path) -> None:
        """A run with --teacher ends with its summary written (the first distilled run of
        2026-11-27 saved its weights, then failed writing training.json: a Path in it)."""
        import numpy as np

        from training.train_entailment import read_pairs, training_file

        train_file = training_file(DATA)
        rows = len(read_pairs(train_file))
        meta = {
            "train_sha256": json.loads((DATA / "manifest.json").read_text())["files"][
                train_file.name
            ],
            "labels": ["entailment", "neutral", "contradiction"],
        }
        teacher = tmp_path / "teacher.npz"
        np.savez(teacher, logits=np.zeros((rows, 3), dtype=np.float32), meta=json.dumps(meta))
        train([
            "--data", str(DATA), "--limit", "32", "--batch-size", "16", "--epochs", "1",
            "--heldback-limit", "4", "--threads", "1", "--layers", "2", "--out", str(tmp_path),
            "--teacher", str(teacher),
        ])  # fmt: skip
        summary = json.loads((tmp_path / "final" / "training.json").read_text())
        assert summary["teacher"] == str(teacher) and summary["kd_alpha"] == 0.5

    def test_segment_ids_switch_after_the_first_separator(self) -> None:
        from training.train_entailment import token_types

        assert token_types([101, 7, 8, 102, 9, 102], 102) == [0, 0, 0, 0, 1, 1]

    def test_a_batch_carries_segment_ids_only_when_asked(self) -> None:
        from training.train_entailment import collate

        ids = [[101, 7, 102, 9, 102], [101, 7, 8, 102, 9, 10, 102]]
        plain = collate(ids, 0)
        assert "token_type_ids" not in plain  # the model reads zeros: how v4 trained
        typed = collate(ids, 0, sep_id=102)
        assert typed["token_type_ids"].tolist() == [[0, 0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 1, 1, 1]]
        assert (typed["input_ids"] == plain["input_ids"]).all()

    def test_the_exporter_reads_the_token_types_a_run_trained_with(self, tmp_path: Path) -> None:
        from training.export_onnx import trained_token_types

        assert trained_token_types(None) == "zeros"  # a checkpoint: no summary
        assert trained_token_types(tmp_path) == "zeros"
        (tmp_path / "training.json").write_text(json.dumps({"seed": 1}))
        assert trained_token_types(tmp_path) == "zeros"  # a run older than the option
        (tmp_path / "training.json").write_text(json.dumps({"token_types": "segments"}))
        assert trained_token_types(tmp_path) == "segments"


class TestAnswerabilityData:
    def test_changed_questions_no_longer_match_their_answer_sentence(self) -> None:
        from training.build_answerability_data import changed_questions

        sentence = "In 1829 Chopin heard Paganini play the violin in Warsaw."
        made = dict(
            (rule, q)
            for q, rule in changed_questions(
                "When did Chopin hear Paganini in 1829?",
                sentence,
                ["Liszt", "Paris"],
                random.Random(0),
            )
        )
        assert "Paganini" not in made["hard_entity"] or "Chopin" not in made["hard_entity"]
        assert "1829" not in made["hard_number"]
        assert " not " in made["hard_negation"]

    def test_plain_questions_pair_gold_sentences_and_other_sections(self) -> None:
        from training.build_answerability_data import ipc_question_pairs

        sections = [
            statute_pairs.Section(
                "IPC_379",
                "Punishment for theft",
                ("Whoever commits theft shall be punished with imprisonment for three years.",),
            ),
            statute_pairs.Section(
                "IPC_378",
                "Theft",
                ("Whoever takes movable property dishonestly is said to commit theft.",),
            ),
            statute_pairs.Section(
                "IPC_302",
                "Punishment for murder",
                ("Whoever commits murder shall be punished with death.",),
            ),
        ]
        questions = [
            {
                "id": "train-001",
                "question": "How long can someone go to jail for stealing a bike?",
                "answerable": True,
                "gold_doc_ids": ["IPC_379"],
                # quoted with other spacing than the chunk: still matched
                "key_sentences": [
                    "Whoever commits theft shall be punished with  imprisonment for three years."
                ],
            },
            {
                "id": "train-002",
                "question": "Can my landlord keep my deposit after I steal nothing?",
                "answerable": False,
                "gold_doc_ids": [],
                "key_sentences": [],
            },
        ]
        rows = list(ipc_question_pairs(questions, sections, negatives=1))
        answers = [r for r in rows if r["label"] == "answers"]
        assert [r["premise"] for r in answers] == [sections[0].sentences[0]]
        first = [r for r in rows if r["group"] == "ipc_plain:train-001"]
        # the negative comes from another section, found through "steal" -> theft
        negatives = [r["premise"] for r in first if r["label"] == "not_answers"]
        assert negatives == [sections[1].sentences[0]]
        second = [r for r in rows if r["group"] == "ipc_plain:train-002"]
        assert second and all(r["label"] == "not_answers" for r in second)
        assert {r["source"] for r in second} == {"ipc_plain_unanswerable"}

    def test_plain_question_without_a_matching_key_sentence_is_an_error(self) -> None:
        from training.build_answerability_data import ipc_question_pairs

        section = statute_pairs.Section("IPC_302", "Punishment for murder", ("Death.",))
        row = {
            "id": "train-009",
            "question": "What happens to a killer?",
            "answerable": True,
            "gold_doc_ids": ["IPC_302"],
            "key_sentences": ["Life imprisonment."],
        }
        with pytest.raises(ValueError, match="train-009"):
            list(ipc_question_pairs([row], [section]))

    def test_held_back_groups_are_fixed(self) -> None:
        from training.build_answerability_data import held_back

        groups = [f"squad:A:{i}" for i in range(200)]
        held = [i for i, g in enumerate(groups) if held_back(g)]
        # Pinned: a change of the rule would move held-back groups into training.
        assert held[:8] == [6, 14, 20, 35, 56, 57, 61, 69]
        # The rule, computed here on its own: one group in ten by CRC-32.
        assert held == [i for i, g in enumerate(groups) if zlib.crc32(g.encode()) % 10 == 0]
        assert 5 <= len(held) <= 40

    def test_vendored_answerability_split_is_disjoint(self) -> None:
        from training.train_entailment import read_pairs, training_file

        folder = DATA.parent / "answerability"

        def groups(path: Path) -> set[str]:
            return {row["group"] for row in read_pairs(path)}

        assert training_file(folder).name == "train.jsonl.xz"
        assert not groups(folder / "heldback.jsonl.gz") & groups(training_file(folder))


def test_hand_written_plain_questions_pass_their_checker() -> None:
    """training/sources/ipc_plain_questions_v1.jsonl: every key sentence quotes its gold
    section, ids are unique, no question repeats the tune set's (the script's own checks)."""
    import subprocess
    import sys

    script = Path("training/sources/check_ipc_plain_questions.py")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all checks passed" in done.stdout


def test_hand_written_statute_pairs_pass_their_checker() -> None:
    """training/sources/ipc_nli_pairs_v1.jsonl: premises quote their section, labels and
    categories agree, and no section is one of the adversarial evaluation set's."""
    import subprocess
    import sys

    script = Path("training/sources/check_ipc_nli_pairs.py")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all checks passed" in done.stdout


def test_heldback_accuracy_scores_the_shipped_model_by_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gzip

    from training import heldback_accuracy

    rows = [
        {"premise": "A man is sleeping.", "hypothesis": "A man is sleeping.",
         "label": "entailment", "source": "a"},
        {"premise": "A man is sleeping.", "hypothesis": "Nobody is sleeping.",
         "label": "entailment", "source": "b"},
    ]  # fmt: skip
    with gzip.open(tmp_path / "heldback.jsonl.gz", "wt") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in rows)
    heldback_accuracy.main(["--data", str(tmp_path), "--threads", "1"])
    accuracy = json.loads(capsys.readouterr().out)["accuracy"]
    assert accuracy["source:a"] == 1.0 and accuracy["source:b"] == 0.0  # a contradiction
    assert accuracy["all"] == 0.5 and accuracy["label:entailment"] == 0.5


def test_heldback_accuracy_leaves_out_pairs_over_the_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gzip

    from training import heldback_accuracy

    rows = [
        {
            "premise": "A man is sleeping.",
            "hypothesis": "A man is sleeping.",
            "label": "entailment",
        },
        {"premise": "word " * 300, "hypothesis": "A man is sleeping.", "label": "neutral"},
    ]
    with gzip.open(tmp_path / "heldback.jsonl.gz", "wt") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in rows)
    heldback_accuracy.main(["--data", str(tmp_path), "--threads", "1"])
    result = json.loads(capsys.readouterr().out)
    assert result["pairs"] == 1 and result["over_window_left_out"] == 1
    assert result["accuracy"]["all"] == 1.0


class TestAnswerabilityCalibration:
    """training.calibrate_answerability: the do-no-harm bound, against the keyword rules or
    against the shipped configuration's measured rates (--baseline)."""

    @staticmethod
    def rows() -> list[Any]:
        from training.calibrate_answerability import Row

        # Two answerable items the keyword rules answer (scores 0.9, 0.4), one unanswerable
        # they answer (0.3), one answerable they refuse for words (0.8, rescuable).
        return [
            Row(True, True, "", 0.9, item_id="a"),
            Row(True, True, "", 0.4, item_id="b"),
            Row(False, True, "", 0.3, item_id="c"),
            Row(True, False, "KEY_TERM_MATCH", 0.8, item_id="d"),
        ]

    def test_the_bound_follows_the_baseline_it_is_given(self) -> None:
        from training.calibrate_answerability import harmless

        sets = [self.rows()]
        # veto below 0.5: "b" (answerable) and "c" are refused: FR 1/3 -> 2/3, CR 0 -> 1.
        assert not harmless(sets, "veto", 0.5, 1.0)  # FR +1/3 against the keyword rules
        lenient = [{"correct_refusal": 0.0, "false_refusal": 0.667}]
        assert harmless(sets, "veto", 0.5, 1.0, lenient, 0.02)
        strict = [{"correct_refusal": 1.0, "false_refusal": 0.667}]
        assert not harmless(sets, "veto", 0.2, 1.0, strict, 0.02)  # CR 0 < 1 - 0.02

    def test_measured_rates_read_the_same_items_from_a_report(self, tmp_path: Path) -> None:
        from training.calibrate_answerability import measured_rates

        report = tmp_path / "report.json"
        statuses = {"a": "answered", "b": "refused", "c": "refused", "d": "answered", "z": "x"}
        items = [{"item_id": k, "status": v} for k, v in statuses.items()]
        report.write_text(json.dumps({"items": items}))
        assert measured_rates(report, self.rows()) == {
            "correct_refusal": 1.0,
            "false_refusal": 0.333,
        }
        report.write_text(json.dumps({"items": items[1:]}))
        with pytest.raises(SystemExit, match="1 tune items missing"):
            measured_rates(report, self.rows())


def test_hand_written_statute_pairs_become_training_rows_by_category() -> None:
    from training.build_data import IPC_WRITTEN, ipc_written_pairs

    rows = ipc_written_pairs(IPC_WRITTEN)
    assert len(rows) == 1455
    assert {r["label"] for r in rows} == {"entailment", "neutral", "contradiction"}
    assert all(str(r["source"]).startswith("ipc_written:") for r in rows)
    assert {"ipc_written:role_swap", "ipc_written:paraphrase_partial"} <= {
        r["source"] for r in rows
    }


def test_nearest_similarity_is_each_rows_best_cosine() -> None:
    import numpy as np

    from training.near_duplicates import nearest_similarity

    vectors = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    others = np.array([[0.0, 1.0], [0.8, 0.6]], dtype=np.float32)
    assert nearest_similarity(vectors, others).tolist() == pytest.approx([0.8, 0.96])


RETRIEVAL_ROWS = (
    {"hypothesis": "q1", "premise": "a1", "label": "answers", "group": "g1"},
    {"hypothesis": "q1", "premise": "a1", "label": "answers", "group": "g1"},  # a copy
    {"hypothesis": "q1", "premise": "b1", "label": "answers", "group": "g1"},
    {"hypothesis": "q1", "premise": "n1", "label": "not_answers", "group": "g1"},
    {"hypothesis": "q2", "premise": "a2", "label": "answers", "group": "g2"},
    {"hypothesis": "q3", "premise": "n3", "label": "not_answers", "group": "g2"},
    {"hypothesis": "q4", "premise": "a4", "label": "answers", "group": "g4"},
)


class TestRetrievalTriplets:
    def test_one_row_per_distinct_answer_with_a_hard_negative(self) -> None:
        from training.train_retrieval import triplets

        rows = triplets(RETRIEVAL_ROWS, random.Random(1))
        # q1's copy counts once; q2 borrows its group's negative; q4 has none and is left out.
        assert rows == [("q1", "a1", "n1"), ("q1", "b1", "n1"), ("q2", "a2", "n3")]

    def test_no_batch_repeats_a_question_or_a_sentence(self) -> None:
        from training.train_retrieval import batches

        items = [(f"q{i % 7}", f"s{i % 5}", f"n{i}") for i in range(40)]
        plan = batches(items, 4, random.Random(3))
        assert sorted(i for batch in plan for i in batch) == list(range(40))
        for batch in plan:
            texts = [t for i in batch for t in items[i]]
            assert len(texts) == len(set(texts)) and len(batch) <= 4


def test_statute_headings_are_added_to_ipc_premises_only() -> None:
    from training.add_statute_headings import convert, headed_premises

    unique, shared = headed_premises()
    theft = next(t for t, p in unique.items() if p.startswith("Section 379. "))
    clause = next(iter(shared))
    rows = [
        {"premise": theft, "hypothesis": "q", "label": "answers", "source": "ipc_plain_answer"},
        {"premise": clause, "hypothesis": "q", "label": "not_answers", "source": "ipc_punishment"},
        {"premise": theft, "hypothesis": "q", "label": "answers", "source": "squad_answer"},
    ]
    out, counts = convert(rows, unique, shared)
    assert out[0]["premise"] == f"{unique[theft]}" and out[0]["premise"].endswith(theft)
    assert out[1] == rows[1] and out[2] == rows[2]  # a shared clause and SQuAD stay bare
    assert counts == {"headed": 1, "shared_text": 1}


def test_merged_questions_keep_each_text_once_and_drop_near_ones() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "merge_plain_questions", Path("training/sources/merge_plain_questions.py")
    )
    assert spec is not None and spec.loader is not None
    merge = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(merge)
    rows = [
        {"question": "Is bail a right?"},
        {"question": "Can I be jailed for this?"},
        {"question": "is  BAIL a right?"},  # a second writer's copy
        {"question": "What is theft?"},
    ]
    kept = merge.keep(rows, [False, True, False, False])
    assert [r["question"] for r in kept] == ["Is bail a right?", "What is theft?"]


class TestCalibrationFloors:
    """training.calibrate --min-group-accuracy GROUP=ACCURACY: a constraint, never ignored."""

    def test_parsed(self) -> None:
        from training.calibrate import parse_floors

        assert parse_floors([]) == {}
        assert parse_floors(["scifact_contradict_claim=0.9", "a=1"]) == {
            "scifact_contradict_claim": 0.9,
            "a": 1.0,
        }

    @pytest.mark.parametrize("raw", ["scifact", "=0.9", "group=", "group=high", "group=1.5"])
    def test_a_malformed_floor_is_an_error(self, raw: str) -> None:
        from training.calibrate import parse_floors

        with pytest.raises(SystemExit, match="GROUP=ACCURACY"):
            parse_floors([raw])


class TestDecontamination:
    """training.decontamination: evaluation sets against the training data, exactly."""

    def test_the_statements_set_and_the_probes_are_checked(self) -> None:
        from training.near_duplicates import CLAIM_SETS, EVALUATION_SETS

        assert Path("data/golden/ipc_statements_v1.jsonl") in EVALUATION_SETS
        assert {p.parent.name for p in CLAIM_SETS} == {
            "ipc_adversarial",
            "ipc_paraphrase_probe",
            "ipc_numeric_probe",
            "ipc_role_probe",
        }
        assert all(p.exists() for p in (*EVALUATION_SETS, *CLAIM_SETS))

    def test_texts_match_verbatim_case_and_spacing_aside(self) -> None:
        from training.decontamination import norm, section_id

        assert norm("  Whoever  steals\nShall be punished. ") == "whoever steals shall be punished"
        assert norm("What is theft?") == norm("what is theft")
        assert section_id("128") == section_id("IPC_128") == "IPC_128"

    def test_overlaps_count_claims_evidence_and_sections(self) -> None:
        from training.decontamination import Item, Training, overlaps

        training = Training(
            premises={"entailment": {"the premise"}},
            hypotheses={"entailment": {"a claim seen in training"}},
            hand_written={"a hand-written hypothesis"},
            hand_written_sections={"IPC_1"},
        )
        items = [
            Item("x-1", ("A claim seen in training.",), ("The premise.",), ("IPC_1",), True),
            Item("x-2", ("A hand-written  hypothesis",), ("other text",), ("IPC_2",), True),
            Item("x-3", ("unseen",), ("other text",), ("IPC_1",), False),
        ]
        out = overlaps(items, training)
        assert out["claims_verbatim_in_training"] == {
            "entailment": ["x-1"],
            "hand-written": ["x-2"],
        }
        assert out["evidence_texts"] == 2
        assert out["evidence_texts_that_are_training_premises"] == {"entailment": 1}
        assert (out["sections"], out["sections_in_hand_written_pairs"]) == (2, 1)
        assert out["items_about_such_a_section"] == 2
        assert out["report_half_items_about_such_a_section"] == 1

    def test_hand_written_overlap_names_verbatim_claims_by_id(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from training import decontamination

        pairs = tmp_path / "ipc_nli_pairs_x.jsonl"
        pairs.write_text(
            json.dumps({"section": "IPC_5", "premise": "P.", "hypothesis": "Said before."}) + "\n"
        )
        probe = tmp_path / "probe.jsonl"
        probe.write_text(
            "".join(
                json.dumps({"id": i, "section": s, "claim": c}) + "\n"
                for i, s, c in (("pr-1", "IPC_5", "said before"), ("pr-2", "IPC_6", "new"))
            )
        )
        monkeypatch.setattr(decontamination, "HAND_WRITTEN_PAIRS", (pairs,))
        assert decontamination.hand_written_overlap(probe) == {
            "sections": 2,
            "sections_in_pairs": 1,
            "claims_verbatim": ["pr-1"],
        }

    def test_heldback_sources_fall_into_families(self) -> None:
        from training.decontamination import family_of

        assert family_of("ipc_plain_other_section") == "ipc_plain"
        assert family_of("ipc_punishment") == "ipc"
        assert family_of("squad_hard_entity") == "squad"
        assert family_of("cad_snli") == "cad_snli" and family_of("snli_dev") == "snli"


class TestShippingFigures:
    """training.calibrate: accuracy over the accuracy groups; the rule-made groups are gates."""

    def test_rule_made_groups_are_gates_and_the_rest_accuracy(self) -> None:
        from bench.validator_accuracy import (
            CITATION_PERTURBATIONS,
            CONTRADICTIONS,
            NEGATION_PERTURBATIONS,
            NOT_ENOUGH_INFO,
            NUMBER_PERTURBATIONS,
            PARAPHRASES,
        )
        from training.calibrate import ACCURACY_GROUPS

        gates = {*PARAPHRASES, *NUMBER_PERTURBATIONS, *NEGATION_PERTURBATIONS}
        gates |= set(CITATION_PERTURBATIONS)
        assert not gates & ACCURACY_GROUPS
        assert {*CONTRADICTIONS, *NOT_ENOUGH_INFO, "scifact_support_claim"} <= ACCURACY_GROUPS
        assert "hotpot_qa_statement" in ACCURACY_GROUPS
        assert {g for g in ACCURACY_GROUPS if g.startswith("adversarial:")} == {
            "adversarial:contradiction",
            "adversarial:paraphrase",
            "adversarial:unsupported",
        }

    def test_two_figures_and_gate_changes_from_manifests(self, tmp_path: Path) -> None:
        from training.calibrate import summarise

        def manifest(name: str, per: dict[str, float]) -> Path:
            path = tmp_path / name
            path.write_text(json.dumps({"calibration": {"per_group_accuracy": per}}))
            return path

        new = manifest(
            "new.json",
            {"adversarial:paraphrase": 0.9, "scifact_support_claim": 0.3, "ipc_rewrite": 0.8,
             "number_changed": 1.0},
        )  # fmt: skip
        old = manifest(
            "old.json",
            {"adversarial:paraphrase": 0.8, "scifact_support_claim": 0.3, "ipc_rewrite": 0.9,
             "number_changed": 1.0},
        )  # fmt: skip
        out = summarise(new, old)
        assert out["accuracy_balanced_accuracy"] == 0.6
        assert out["regression_gates"] == {"ipc_rewrite": 0.8, "number_changed": 1.0}
        assert out["lowest_gate"] == ("ipc_rewrite", 0.8)
        assert out["against_accuracy_balanced_accuracy"] == 0.55
        assert out["gate_changes"] == {"ipc_rewrite": -0.1, "number_changed": 0.0}

    def test_the_shipped_manifest_gives_both_figures(self) -> None:
        from training.calibrate import summarise

        out = summarise(Path("models/entailment-minilm-l6/manifest.json"))
        assert len(out["accuracy_groups"]) == 7 and len(out["regression_gates"]) == 11
        assert 0.0 < out["accuracy_balanced_accuracy"] < 1.0


class TestHeldbackComparison:
    """``training.heldback_accuracy --compare``: two models on the same held-back pairs."""

    def test_paired_difference_is_the_mean_per_pair_difference_with_its_variance(self) -> None:
        first = [True, True, False, False, True, False]
        second = [True, False, True, True, True, False]
        difference, (low, high) = paired_difference(first, second)
        per_pair = [int(b) - int(a) for a, b in zip(first, second, strict=True)]
        mean = sum(per_pair) / len(per_pair)
        variance = (sum(d * d for d in per_pair) / len(per_pair) - mean**2) / len(per_pair)
        assert difference == pytest.approx(mean) == pytest.approx(1 / 6)
        assert (high - low) / 2 == pytest.approx(1.959964 * variance**0.5, rel=1e-5)

    def test_models_that_agree_on_every_pair_differ_by_nothing(self) -> None:
        assert paired_difference([True, False, True], [True, False, True]) == (0.0, (0.0, 0.0))

    def test_the_comparison_scores_both_models_on_the_same_pairs(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        rows = [
            {"premise": "A man is sleeping.", "hypothesis": "A man is sleeping.",
             "label": "entailment"},
            {"premise": "A man is sleeping.", "hypothesis": "Nobody is sleeping.",
             "label": "entailment"},
            {"premise": "word " * 300, "hypothesis": "A man is sleeping.", "label": "neutral"},
        ]  # fmt: skip
        with gzip.open(tmp_path / "heldback.jsonl.gz", "wt") as handle:
            handle.writelines(json.dumps(r) + "\n" for r in rows)
        model = str(Path(__file__).resolve().parents[3] / "models" / "entailment-minilm-l6")
        heldback(
            ["--data", str(tmp_path), "--threads", "1", "--model-dir", model, "--compare", model]
        )
        result = json.loads(capsys.readouterr().out)
        assert result["pairs"] == 2 and result["over_window_left_out"] == 1
        compared = result["compared"]
        assert compared["accuracy"] == result["accuracy"] and result["accuracy"]["all"] == 0.5
        assert compared["difference"] == 0.0 and compared["mcnemar_p"] == 1.0
        assert compared["only_this_right"] == compared["only_model_dir_right"] == 0
        low, high = result["accuracy_ci95"]
        assert low < 0.5 < high


class TestSoup:
    """training.soup averages runs that started from the same weights, and refuses others."""

    def test_float_tensors_are_averaged_and_other_tensors_kept(self) -> None:
        from training.soup import average

        a = {"w": torch.tensor([1.0, 2.0]), "ids": torch.tensor([0, 1])}
        b = {"w": torch.tensor([3.0, 6.0]), "ids": torch.tensor([0, 1])}
        out = average([a, b])
        assert torch.equal(out["w"], torch.tensor([2.0, 4.0]))
        assert torch.equal(out["ids"], torch.tensor([0, 1]))
        with pytest.raises(SystemExit, match="non-float tensor differs"):
            average([a, {**b, "ids": torch.tensor([1, 0])}])

    def test_runs_of_other_data_or_another_head_are_refused(self) -> None:
        from training.soup import check_runs

        run = {"seed": 1, "data_sha256": {"train": "x"}, "base_sha256": "b"}
        check_runs([run, {**run, "seed": 2, "init_seed": 1}], ["a", "b"])
        with pytest.raises(SystemExit, match="head was drawn with seed 2"):
            check_runs([run, {**run, "seed": 2}], ["a", "b"])
        with pytest.raises(SystemExit, match="differs from a in data_sha256"):
            check_runs([run, {**run, "data_sha256": {"train": "y"}}], ["a", "b"])
        with pytest.raises(SystemExit, match="at least two"):
            check_runs([run], ["a"])

    @pytest.mark.slow
    def test_init_seed_shares_the_head_and_the_soup_is_the_mean(self, tmp_path: Path) -> None:
        """At lr 0 nothing moves, so each run's final weights are its starting ones: runs that
        share --init-seed start alike whatever their --seed; without it they do not. Trained
        runs of one start average into a model that exports like any run."""
        from transformers import AutoModelForSequenceClassification

        from training.soup import main as soup

        def run(out: str, *extra: str) -> Path:
            train([
                "--data", str(DATA), "--limit", "32", "--batch-size", "16", "--epochs", "1",
                "--heldback-limit", "4", "--threads", "1", "--layers", "2",
                "--out", str(tmp_path / out), *extra,
            ])  # fmt: skip
            return tmp_path / out

        def head(path: Path) -> torch.Tensor:
            model = AutoModelForSequenceClassification.from_pretrained(str(path / "final"))
            return model.classifier.weight.detach()

        frozen = [run(f"lr0_{s}", "--lr", "0", "--seed", s, "--init-seed", "7") for s in "12"]
        assert torch.equal(head(frozen[0]), head(frozen[1]))
        assert not torch.equal(head(frozen[0]), head(run("lr0_3", "--lr", "0", "--seed", "3")))

        runs = [run(f"run_{s}", "--seed", s, "--init-seed", "7") for s in "12"]
        assert not torch.equal(head(runs[0]), head(runs[1]))
        soup([*map(str, runs), "--out", str(tmp_path / "soup"), "--data", str(DATA)])
        mixed = AutoModelForSequenceClassification.from_pretrained(str(tmp_path / "soup"))
        assert torch.allclose(mixed.classifier.weight, (head(runs[0]) + head(runs[1])) / 2)
        summary = json.loads((tmp_path / "soup" / "training.json").read_text())
        assert [r["seed"] for r in summary["soup"]] == [1, 2]
        assert 0.0 <= summary["heldback_accuracy"] <= 1.0
        with pytest.raises(SystemExit, match="head was drawn"):
            soup([str(runs[0]), str(tmp_path / "lr0_3"), "--out", str(tmp_path / "bad")])
        # A soup made without --data has no held-back figure; a soup of it still reports.
        soup([*map(str, runs), "--out", str(tmp_path / "unscored")])
        assert (
            json.loads((tmp_path / "unscored" / "training.json").read_text())["heldback_accuracy"]
            is None
        )
        soup([str(tmp_path / "unscored"), str(runs[0]), "--out", str(tmp_path / "again"),
              "--data", str(DATA)])  # fmt: skip

    @pytest.mark.slow
    def test_snapshots_along_a_run_leave_it_unchanged_and_average(self, tmp_path: Path) -> None:
        """--snapshot-every saves the model at the steps asked for without changing the run
        (the final weights equal a run without snapshots), and training.soup averages the
        snapshots of one run like runs of one start."""
        from transformers import AutoModelForSequenceClassification

        from training.soup import main as soup

        common = [
            "--data", str(DATA), "--limit", "48", "--batch-size", "16", "--epochs", "1",
            "--heldback-limit", "4", "--threads", "1", "--layers", "2",
        ]  # fmt: skip
        train([*common, "--out", str(tmp_path / "plain")])
        train([*common, "--out", str(tmp_path / "snap"), "--snapshot-every", "1",
               "--snapshot-from", "2"])  # fmt: skip
        shots = sorted(p.name for p in (tmp_path / "snap" / "snapshots").iterdir())
        assert shots == ["step_00002", "step_00003"]

        def weights(path: Path) -> dict[str, torch.Tensor]:
            model = AutoModelForSequenceClassification.from_pretrained(str(path))
            return {k: v.detach() for k, v in model.state_dict().items()}

        plain, last = weights(tmp_path / "plain" / "final"), weights(tmp_path / "snap" / "final")
        assert all(torch.equal(plain[k], last[k]) for k in plain)
        step3 = weights(tmp_path / "snap" / "snapshots" / "step_00003")
        assert all(torch.equal(last[k], step3[k]) for k in last)
        step2 = weights(tmp_path / "snap" / "snapshots" / "step_00002")
        assert not torch.equal(step2["classifier.weight"], last["classifier.weight"])
        summary = json.loads(
            (tmp_path / "snap" / "snapshots" / "step_00002" / "training.json").read_text()
        )
        assert summary["steps"] == 2 and summary["heldback_accuracy"] is None
        soup([
            str(tmp_path / "snap" / "snapshots" / name) for name in shots
        ] + ["--out", str(tmp_path / "tail")])  # fmt: skip
        tail = weights(tmp_path / "tail")
        assert torch.allclose(
            tail["classifier.weight"], (step2["classifier.weight"] + last["classifier.weight"]) / 2
        )

"""The harness's pure parts: response conversion, index caching and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.type.v1 import evidence_pb2, validation_pb2

from evaluation.ablations import ANSWER_METRICS, ablation_row, ablations_to_dict, render_ablations
from evaluation.client import (
    CLIENT_STAGE,
    Retrieved,
    draft_of,
    outcome_from_response,
    resolve_citations,
)
from evaluation.datasets import load_dataset
from evaluation.indexes import PreparedIndex, prepare_index
from evaluation.metrics import BootstrapConfig, Metric, ratio_metric, score_run
from evaluation.records import EvalItem, Outcome, Status
from evaluation.run import parse_args
from evaluation.stack import Endpoints
from evaluation.targets import MET, NOT_MET, POINT_ONLY, TARGETS, Target, render_targets
from services.common.refusal import REFUSAL
from services.common.validation import Verdict
from services.retrieval.embedding import DEFAULT_MODEL_NAME
from tests.support.fake_encoder import HashingEncoder

SQUAD = {
    "version": "v2.0",
    "data": [
        {
            "title": "Rivers",
            "paragraphs": [
                {
                    "context": "The Nile is long. It flows north.",
                    "qas": [
                        {
                            "id": "q1",
                            "question": "Which way does the Nile flow?",
                            "answers": [{"text": "north", "answer_start": 27}],
                            "is_impossible": False,
                        }
                    ],
                }
            ],
        }
    ],
}


def _passage(semantic_id: str, text: str, doc_id: str = "") -> evidence_pb2.Passage:
    return evidence_pb2.Passage(semantic_id=semantic_id, text=text, doc_id=doc_id)


class TestResolveCitations:
    EVIDENCE = (
        _passage("Nile_p0_1", "It flows north.", doc_id="Nile_p0"),
        _passage("Nile_p0_2", "Risk rose (OR 1.5 [95% CI, 1.1-2.0]).", doc_id="Nile_p0"),
    )

    def test_resolve_citations_reads_adjacent_listed_and_numbered_forms(self) -> None:
        answer = "It flows north [Nile_p0_1][Nile_p0_2]. Again [Nile_p0_1, Nile_p0_2] [2]."
        citations = resolve_citations(answer, self.EVIDENCE)
        assert [c.semantic_id for c in citations] == ["Nile_p0_1", "Nile_p0_2"]
        assert all(c.valid for c in citations)
        assert citations[0].text == "It flows north." and citations[0].document == "Nile_p0"

    def test_resolve_citations_marks_ids_outside_the_evidence_invalid(self) -> None:
        citations = resolve_citations("It flows north [Nile_p0_1][Ghost_9].", self.EVIDENCE)
        assert [(c.semantic_id, c.valid) for c in citations] == [
            ("Nile_p0_1", True),
            ("Ghost_9", False),
        ]
        assert citations[1].document == "Ghost"

    def test_resolve_citations_leaves_brackets_quoted_from_the_evidence_as_text(self) -> None:
        answer = "Risk rose (OR 1.5 [95% CI, 1.1-2.0]) [Nile_p0_2]."
        citations = resolve_citations(answer, self.EVIDENCE)
        assert [(c.semantic_id, c.valid) for c in citations] == [("Nile_p0_2", True)]

    def test_resolve_citations_of_the_refusal_is_empty(self) -> None:
        assert resolve_citations(REFUSAL, self.EVIDENCE) == ()


class TestOutcomeFromResponse:
    def test_outcome_from_answered_response_keeps_citations_timings_and_verdict(self) -> None:
        response = spb.SynthesizeAnswerResponse(
            status=spb.ANSWER_STATUS_ANSWERED,
            answer="It flows north [Nile_p0_1].",
            evidence=[_passage("Nile_p0_1", "It flows north.", doc_id="Nile_p0")],
            timings=[
                evidence_pb2.StageTiming(stage="retrieval", ran=True, duration_ms=12.0),
                evidence_pb2.StageTiming(stage="retrieval.dense", ran=True, duration_ms=5.0),
                evidence_pb2.StageTiming(stage="total", ran=True, duration_ms=20.0),
            ],
            validation=validation_pb2.ValidationReport(
                verdict=validation_pb2.VALIDATION_VERDICT_GROUNDED
            ),
        )
        retrieved = Retrieved(("Nile_p0_1",), ("It flows north.",), "v1")
        outcome = outcome_from_response("q1", response, client_ms=25.0, retrieved=retrieved)
        assert outcome.status is Status.ANSWERED
        assert [c.semantic_id for c in outcome.citations] == ["Nile_p0_1"]
        assert outcome.validator_verdict is Verdict.GROUNDED
        assert dict(outcome.latency_ms) == {"retrieval": 12.0, "total": 20.0, CLIENT_STAGE: 25.0}
        assert outcome.retrieved_ids == ("Nile_p0_1",)

    def test_outcome_from_refusal_is_refused_without_citations(self) -> None:
        response = spb.SynthesizeAnswerResponse(
            status=spb.ANSWER_STATUS_REFUSED_INSUFFICIENT_EVIDENCE,
            answer=REFUSAL,
            refusal_reason="no definitional language",
            refusal_code=spb.REFUSAL_CODE_INSUFFICIENT_EVIDENCE,
            sufficiency=spb.SufficiencyReport(
                failed_requirement=spb.SUFFICIENCY_REQUIREMENT_DEFINITIONAL_LANGUAGE
            ),
            evidence=[_passage("Nile_p0_1", "It flows north.")],
        )
        outcome = outcome_from_response("q1", response, client_ms=3.0)
        assert outcome.status is Status.REFUSED
        assert outcome.citations == ()
        assert outcome.validator_verdict is None
        assert outcome.refusal_reason == "INSUFFICIENT_EVIDENCE (DEFINITIONAL_LANGUAGE)"
        report = score_run([EvalItem("q1", "Which way?", answerable=True)], [outcome])
        assert report.refusal_reasons == {
            "answerable": {"INSUFFICIENT_EVIDENCE (DEFINITIONAL_LANGUAGE)": 1}
        }


class TestDraftOf:
    def test_draft_of_answer_is_the_answer(self) -> None:
        response = spb.SynthesizeAnswerResponse(
            status=spb.ANSWER_STATUS_ANSWERED, answer="A [x_0]."
        )
        assert draft_of(response) == "A [x_0]."

    def test_draft_of_rejected_draft_joins_the_validated_sentences(self) -> None:
        response = spb.SynthesizeAnswerResponse(
            status=spb.ANSWER_STATUS_REFUSED_VALIDATION_FAILED,
            answer=REFUSAL,
            validation=validation_pb2.ValidationReport(
                verdict=validation_pb2.VALIDATION_VERDICT_NOT_GROUNDED,
                sentences=[
                    validation_pb2.SentenceReport(text="A [x_0]."),
                    validation_pb2.SentenceReport(text="B."),
                ],
            ),
        )
        assert draft_of(response) == "A [x_0]. B."

    def test_draft_of_refusal_before_generation_is_none(self) -> None:
        response = spb.SynthesizeAnswerResponse(
            status=spb.ANSWER_STATUS_REFUSED_INSUFFICIENT_EVIDENCE, answer=REFUSAL
        )
        assert draft_of(response) is None


class TestPrepareIndex:
    def test_prepare_index_builds_once_then_reuses_without_loading_the_encoder(
        self, tmp_path: Path
    ) -> None:
        data = tmp_path / "dev.json"
        data.write_text(json.dumps(SQUAD), encoding="utf-8")
        dataset = load_dataset("squad2", data)
        encoder = HashingEncoder(dim=4, name="fake-encoder")
        loads: list[int] = []

        def factory() -> HashingEncoder:
            loads.append(1)
            return encoder

        root = tmp_path / "cache"
        first, second = (
            prepare_index(
                dataset, root=root, encoder_factory=factory, model_name=encoder.name, progress=False
            )
            for _ in range(2)
        )
        assert not first.reused and second.reused
        assert len(loads) == 1 and encoder.calls >= 1
        # The packaged model's index is cache/index; any other model's is named after it.
        assert first.index_dir == dataset.cache_dir(root) / "index-fake-encoder"
        assert first.corpus_file.read_bytes() == dataset.corpus_bytes()
        assert second.chunk_count == first.chunk_count > 0

    def test_prepare_index_keeps_one_index_per_model(self, tmp_path: Path) -> None:
        data = tmp_path / "dev.json"
        data.write_text(json.dumps(SQUAD), encoding="utf-8")
        dataset = load_dataset("squad2", data)
        encoder, other = (
            HashingEncoder(dim=4, name="fake-encoder"),
            HashingEncoder(dim=4, name="fake-encoder"),
        )
        other.name = "another-encoder"
        root = tmp_path / "cache"

        def prepare(enc: HashingEncoder) -> PreparedIndex:
            return prepare_index(
                dataset, root=root, encoder_factory=lambda: enc, model_name=enc.name, progress=False
            )

        first, second, again = prepare(encoder), prepare(other), prepare(encoder)
        assert not first.reused and not second.reused
        assert second.model == "another-encoder" and other.calls >= 1
        assert second.index_dir != first.index_dir
        # Switching back to the first model finds its index untouched.
        assert again.reused and again.index_dir == first.index_dir

    def test_default_model_keeps_the_plain_index_directory(self, tmp_path: Path) -> None:
        data = tmp_path / "dev.json"
        data.write_text(json.dumps(SQUAD), encoding="utf-8")
        dataset = load_dataset("squad2", data)
        encoder = HashingEncoder(dim=4, name=DEFAULT_MODEL_NAME)
        prepared = prepare_index(
            dataset,
            root=tmp_path,
            encoder_factory=lambda: encoder,
            model_name=encoder.name,
            progress=False,
        )
        assert prepared.index_dir == dataset.cache_dir(tmp_path) / "index"


class TestParseArgs:
    def test_parse_args_defaults_to_every_dataset_in_process(self) -> None:
        options = parse_args([])
        assert options.datasets == ("ipc", "squad2", "hotpotqa", "scifact")
        assert options.endpoints is None and options.limit is None
        assert options.command == "python -m evaluation"

    def test_parse_args_deployed_stack(self) -> None:
        options = parse_args(["--dataset", "ipc", "--synthesis", "h:1", "--retrieval", "h:2"])
        assert options.endpoints == Endpoints("h:1", "h:2", "")
        assert (
            options.command == "python -m evaluation --dataset ipc --synthesis h:1 --retrieval h:2"
        )

    @pytest.mark.parametrize(
        "argv",
        [
            ["--limit", "0"],
            ["--data", "x.json"],  # every dataset with one file
            ["--retrieval", "h:2"],  # without --synthesis
            ["--synthesis", "h:1"],  # a deployed stack with every dataset
            ["--dataset", "ipc", "--synthesis", "h:1", "--index-dir", "x"],
        ],
    )
    def test_parse_args_rejects_inconsistent_options(self, argv: list[str]) -> None:
        with pytest.raises(SystemExit):
            parse_args(argv)

    def test_parse_args_takes_a_setting_a_service_reads(self) -> None:
        options = parse_args(["--dataset", "ipc", "--set", "SYNTHESIS_ANSWERABILITY=shadow"])
        assert options.server_settings == {"SYNTHESIS_ANSWERABILITY": "shadow"}

    @pytest.mark.parametrize(
        ("setting", "said"),
        [
            # misspelt: no service reads it, so the run would measure the default
            ("VALIDATOR_ENTAILMENT_MODEL_DRI=x", "did you mean VALIDATOR_ENTAILMENT_MODEL_DIR"),
            # without its service's prefix
            ("ENTAILMENT_MODEL_DIR=x", "did you mean VALIDATOR_ENTAILMENT_MODEL_DIR?"),
            # a value the setting does not accept, refused before any index is built
            ("SYNTHESIS_ANSWERABILITY=bogus", "expected one of off, shadow"),
        ],
    )
    def test_parse_args_refuses_a_setting_it_cannot_apply(
        self, setting: str, said: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        with pytest.raises(SystemExit) as caught:
            parse_args(["--dataset", "ipc", "--set", setting])
        assert caught.value.code == 2
        assert said in capsys.readouterr().err

    def test_parse_args_hints_only_names_it_could_take(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # LOG_LEVEL is read by every service, but not as a --set name (no service prefix)
        with pytest.raises(SystemExit):
            parse_args(["--dataset", "ipc", "--set", "LOG_LEVEL=debug"])
        assert "did you mean" not in capsys.readouterr().err


class TestTargets:
    def test_render_targets_marks_a_missed_target(self, tmp_path: Path) -> None:
        data = tmp_path / "dev.json"
        data.write_text(json.dumps(SQUAD), encoding="utf-8")
        dataset = load_dataset("squad2", data)
        report = score_run(dataset.items, [Outcome.from_answer("q1", REFUSAL)])
        table = render_targets("squad2", report)
        assert "false_refusal_rate <= 0.1 | all items (**unrecorded**) | 1.000" in table
        assert "**not met**" in table
        assert "correct_refusal_rate >= 0.9 | all items (**unrecorded**) | n/a" in table
        assert set(TARGETS) == {"ipc", "squad2", "hotpotqa", "scifact"}

    @staticmethod
    def _metric(value: float, low: float, high: float) -> Metric:
        return Metric("x", value, 100, "items", 100, low, high, "wilson")

    @pytest.mark.parametrize(
        ("op", "value", "low", "high", "verdict"),
        [
            (">=", 0.95, 0.91, 0.98, MET),
            (">=", 0.92, 0.86, 0.96, POINT_ONLY),
            (">=", 0.85, 0.78, 0.91, NOT_MET),
            ("<=", 0.05, 0.02, 0.09, MET),
            ("<=", 0.08, 0.04, 0.14, POINT_ONLY),
            ("<=", 0.12, 0.07, 0.19, NOT_MET),
        ],
    )
    def test_a_target_is_met_only_when_the_ci_clears_it(
        self, op: str, value: float, low: float, high: float, verdict: str
    ) -> None:
        target = Target("x", op, 0.90 if op == ">=" else 0.10)
        assert target.verdict(self._metric(value, low, high)) == verdict

    def test_no_ci_is_never_met_and_nothing_measured_is_none(self) -> None:
        target = Target("x", ">=", 0.5)
        assert target.verdict(Metric("x", 0.9, 3, "items", 3, None, None)) == POINT_ONLY
        assert target.verdict(None) is None

    def test_zero_invalid_citations_is_a_point_estimate_only(self) -> None:
        # 0 invalid of 5 citations in 2 items: the Wilson upper bound (over the items) is above
        # 0, so the CI does not meet "<= 0"; the verdict says so rather than "met".
        metric = ratio_metric(
            "invalid_citation_rate", "citations", [(0.0, 3.0), (0.0, 2.0)], BootstrapConfig()
        )
        assert metric.value == 0.0 and metric.ci_high is not None and metric.ci_high > 0
        assert Target("invalid_citation_rate", "<=", 0.0).verdict(metric) == POINT_ONLY


class TestAblations:
    def test_render_ablations_has_one_table_per_kind_with_every_variant(
        self, tmp_path: Path
    ) -> None:
        data = tmp_path / "dev.json"
        data.write_text(json.dumps(SQUAD), encoding="utf-8")
        dataset = load_dataset("squad2", data)
        report = score_run(dataset.items, [Outcome.from_answer("q1", REFUSAL)])
        rows = [
            ablation_row("validator coverage thresholds", label, {}, report, ANSWER_METRICS)
            for label in ("coverage 0.30 / 0.21 (default)", "coverage 0.50 / 0.35")
        ]
        text = render_ablations(rows)
        assert text.count("### validator coverage thresholds (1 items") == 1
        # 0 of 1: a Wilson interval, not the bootstrap's 0.000 (0.000–0.000).
        assert "| coverage 0.50 / 0.35 | n/a | 0.000 (0.000–0.793) |" in text
        assert ablations_to_dict(rows)[0]["n_items"] == 1
        assert render_ablations([]).endswith("None run.\n")

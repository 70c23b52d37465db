"""Synthesis's Prometheus metrics: each step's time in grounded_stage_seconds, and the model a
failure is counted against in grounded_model_failures_total."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as pb
from prometheus_client import REGISTRY

from services.common.errors import ModelUnavailableError
from services.common.evidence import Chunk
from services.synthesis.answerability import (
    AnswerabilityCheck,
    AnswerabilityMode,
    AnswerabilityOptions,
    StatementCheck,
)
from services.synthesis.extractive import ExtractiveGenerator
from services.synthesis.openai_generator import OpenAIGenerator
from services.synthesis.pipeline import (
    STAGES,
    PipelineSettings,
    SynthesisPipeline,
    SynthesisRequest,
    SynthesisStatus,
)
from services.synthesis.servicer import SynthesisServicer
from services.synthesis.streaming import FinishedEvent, stream_answer
from tests.support.fake_openai import FakeOpenAIServer, Messages, Reply, evidence_blocks
from tests.unit.synthesis.fakes import EngineValidator, FakeRetriever, scored

CHEATING = "What is the punishment for cheating under section 420?"
CHEATING_IDS = ("IPC_420_0", "IPC_415_0", "IPC_417_0")
THEFT_IDS = ("IPC_378_0", "IPC_379_0", "IPC_380_0")
CLAIM = "Theft is punished with imprisonment which may extend to three years."


def observed(stage: str) -> tuple[float, float]:
    """(count, sum) of grounded_stage_seconds{service="synthesis", stage}."""
    labels = {"service": "synthesis", "stage": stage}
    count = REGISTRY.get_sample_value("grounded_stage_seconds_count", labels) or 0.0
    total = REGISTRY.get_sample_value("grounded_stage_seconds_sum", labels) or 0.0
    return count, total


def failures(model: str) -> float:
    return REGISTRY.get_sample_value("grounded_model_failures_total", {"model": model}) or 0.0


class TestStageSeconds:
    async def test_each_step_is_observed_once_with_the_time_the_response_reports(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        synth = SynthesisPipeline(
            FakeRetriever(scored(ipc, *CHEATING_IDS)), EngineValidator(), ExtractiveGenerator()
        )
        before = {stage: observed(stage) for stage in (*STAGES, "retrieval.dense", "total")}

        result = await synth.answer(SynthesisRequest(CHEATING, top_k=3))

        assert result.status is SynthesisStatus.ANSWERED
        steps = {"retrieval", "sufficiency", "generation", "validation"}
        assert steps <= set(result.timings_ms)
        for stage, (count, total) in before.items():
            after_count, after_total = observed(stage)
            if stage in steps:
                assert after_count == count + 1, stage
                seconds = result.timings_ms[stage] / 1000
                assert after_total - total == pytest.approx(seconds, abs=1e-9), stage
            else:
                # Steps that did not run, retrieval's own stages (retrieval observes those)
                # and the total (grounded_rpc_latency_seconds has it) are not observed here.
                assert (after_count, after_total) == (count, total), stage

    async def test_a_streamed_sentence_check_is_its_own_stage(
        self, ipc: Mapping[str, Chunk], fake_llm: FakeOpenAIServer, llm: OpenAIGenerator
    ) -> None:
        def draft(messages: Messages) -> str:
            blocks = evidence_blocks(messages)
            return " ".join(f"{text.rstrip(' .;:')} [{cid}]." for cid, text in blocks[:2])

        fake_llm.script(Reply(draft))
        synth = SynthesisPipeline(
            FakeRetriever(scored(ipc, *CHEATING_IDS)),
            EngineValidator(),
            llm,
            PipelineSettings(generation_timeout_s=10),
        )
        before = {stage: observed(stage)[0] for stage in ("validation", "validation.sentence")}

        events = [e async for e in stream_answer(synth, SynthesisRequest(CHEATING))]

        end = events[-1]
        assert isinstance(end, FinishedEvent) and end.sentences_sent == 2
        assert end.result.status is SynthesisStatus.ANSWERED, end.result.refusal_reason
        # Each sentence checked on its own as it arrived, then the whole answer once.
        assert observed("validation.sentence")[0] == before["validation.sentence"] + 2
        assert observed("validation")[0] == before["validation"] + 1

    def test_stage_names_are_a_fixed_set(self) -> None:
        from services.synthesis import pipeline

        with pytest.raises(AssertionError, match="unknown stage"):
            pipeline._stage_done({}, "retrieval.dense", 0.0)


class FailingScorer:
    """A loaded model that fails at run time (out of memory, say)."""

    passage_format = "text"

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        raise ModelUnavailableError(f"the model {self._name} failed to run: out of memory")

    def label_scores(
        self, question: str, passages: Sequence[str]
    ) -> list[tuple[float, float, float]]:
        raise ModelUnavailableError(f"the model {self._name} failed to run: out of memory")


class WorkingScorer(FailingScorer):
    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        return [0.9] * len(passages)


def pipeline(
    ipc: Mapping[str, Chunk],
    scorer: FailingScorer | None,
    statement_scorer: FailingScorer | None = None,
    statements: StatementCheck = StatementCheck.ENTAILMENT,
) -> SynthesisPipeline:
    check = AnswerabilityCheck(AnswerabilityOptions(AnswerabilityMode.BOTH, statements=statements))
    if scorer is not None:
        check.load(scorer, check.options, statement_scorer)
    return SynthesisPipeline(
        FakeRetriever(scored(ipc, *THEFT_IDS)),
        EngineValidator(),
        ExtractiveGenerator(),
        PipelineSettings(candidate_pool=0),
        answerability=check,
    )


class NoDeadline:
    def time_remaining(self) -> float | None:
        return None


class TestModelFailures:
    @pytest.mark.parametrize(
        ("question", "failing"),
        [
            (CLAIM, "entailment"),  # a claim is scored by the entailment model
            ("What is theft?", "answerability"),  # a question by the answerability model
        ],
    )
    async def test_the_servicer_counts_the_model_that_failed(
        self, ipc: Mapping[str, Chunk], question: str, failing: str
    ) -> None:
        names = {role: f"{role}-test-{failing}" for role in ("answerability", "entailment")}
        scorers = {
            role: (FailingScorer if role == failing else WorkingScorer)(name)
            for role, name in names.items()
        }
        synth = pipeline(ipc, scorers["answerability"], scorers["entailment"])
        stopped: list[bool] = []

        async def on_model_failure() -> None:
            stopped.append(True)

        documents: Any = None  # GetDocument is not called
        servicer = SynthesisServicer(
            synth.lease,
            default_top_k=3,
            default_generator="extractive",
            documents=documents,
            documents_timeout_s=1.0,
            on_model_failure=on_model_failure,
        )
        watched = (*names.values(), "answerability")  # the label every failure used to get
        before = {name: failures(name) for name in watched}
        context: Any = NoDeadline()

        with pytest.raises(ModelUnavailableError):
            await servicer.SynthesizeAnswer(pb.SynthesizeAnswerRequest(question=question), context)

        grew = {name for name in watched if failures(name) != before[name]}
        assert grew == {names[failing]}
        assert failures(names[failing]) == before[names[failing]] + 1
        assert stopped == [True]

    @pytest.mark.parametrize(
        ("question", "loaded", "role"),
        [("What is theft?", False, "answerability"), (CLAIM, True, "entailment")],
    )
    async def test_a_model_not_loaded_is_named_by_its_role(
        self, ipc: Mapping[str, Chunk], question: str, loaded: bool, role: str
    ) -> None:
        # No manifest was read, so there is no model name to give.
        synth = pipeline(ipc, WorkingScorer("answerability-test-c") if loaded else None)

        with pytest.raises(ModelUnavailableError) as caught:
            await synth.answer(SynthesisRequest(question, top_k=3))

        assert caught.value.metadata["model"] == role


def refusals(reason: str, requirement: str) -> float:
    labels = {"reason": reason, "requirement": requirement}
    return REGISTRY.get_sample_value("grounded_synthesis_refusals_total", labels) or 0.0


class TestRefusals:
    async def test_a_refusal_is_counted_with_the_requirement_that_failed(
        self, ipc: Mapping[str, Chunk], caplog: pytest.LogCaptureFixture
    ) -> None:
        """A spike of refusals on insufficient evidence can be told apart by requirement (no
        evidence at all, against evidence without the question's terms, ...), in the metric
        and in the refusal's log line."""
        synth = SynthesisPipeline(
            FakeRetriever(()), EngineValidator(), ExtractiveGenerator(), PipelineSettings()
        )
        documents: Any = None  # GetDocument is not called
        servicer = SynthesisServicer(
            synth.lease,
            default_top_k=3,
            default_generator="extractive",
            documents=documents,
            documents_timeout_s=1.0,
        )
        before = refusals("INSUFFICIENT_EVIDENCE", "EVIDENCE_PRESENT")
        unlabelled = refusals("INSUFFICIENT_EVIDENCE", "")
        context: Any = NoDeadline()

        with caplog.at_level("INFO", logger="services.synthesis.pipeline"):
            response = await servicer.SynthesizeAnswer(
                pb.SynthesizeAnswerRequest(question="What is theft?"), context
            )

        assert response.sufficiency.failed_requirement == (
            pb.SUFFICIENCY_REQUIREMENT_EVIDENCE_PRESENT
        )
        assert refusals("INSUFFICIENT_EVIDENCE", "EVIDENCE_PRESENT") == before + 1
        assert refusals("INSUFFICIENT_EVIDENCE", "") == unlabelled
        (line,) = [r for r in caplog.records if r.getMessage() == "refused"]
        assert line.failed_requirement == "EVIDENCE_PRESENT"  # type: ignore[attr-defined]

"""The judge in synthesis's sufficiency check over real gRPC: the shipped answerability model
leaves a question uncertain, and a scripted judge on the loopback OpenAI-protocol server
settles it; a failing judge refuses (issue 17)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grpc import aio

from services.common.config import InvalidSettingError
from services.common.refusal import REFUSAL
from services.synthesis.config import SynthesisConfig
from stack.inprocess import start_in_process
from tests.integration.conftest import Stack
from tests.support.fake_openai import Delay, FakeOpenAIServer, Messages, Reply, evidence_blocks

pytestmark = pytest.mark.integration

QUESTION = "What is the punishment for theft?"


def questions(messages: Messages) -> list[str]:
    return re.findall(r"<question>(.*?)</question>", messages[-1]["content"], re.S)


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(Reply("1: yes")) as server:
        yield server


@pytest.fixture(scope="module")
async def judged_stack(ipc_index: Path, judge_server: FakeOpenAIServer) -> AsyncIterator[Stack]:
    # A band of [0, 1) sends every question the model decides to the judge.
    env = {
        "SYNTHESIS_ANSWERABILITY": "both",
        "SYNTHESIS_JUDGE_BASE_URL": judge_server.base_url,
        "SYNTHESIS_JUDGE_MODEL": "checker-7b",
        "SYNTHESIS_JUDGE_TIMEOUT_S": "1.0",
        "SYNTHESIS_JUDGE_BAND_LOW": "0",
        "SYNTHESIS_JUDGE_BAND_HIGH": "1",
    }
    running = await start_in_process(ipc_index, settings=env)
    yield running
    await running.stop()


async def ask(stack: Stack, question: str) -> spb.SynthesizeAnswerResponse:
    async with aio.insecure_channel(stack.synthesis) as channel:
        response: spb.SynthesizeAnswerResponse = await spb_grpc.SynthesisServiceStub(
            channel
        ).SynthesizeAnswer(spb.SynthesizeAnswerRequest(question=question), timeout=30)
    return response


class TestSufficiencyJudge:
    async def test_confirmed_question_is_answered(
        self, judged_stack: Stack, judge_server: FakeOpenAIServer
    ) -> None:
        judge_server.script(Reply("1: yes"))
        seen = len(judge_server.requests)
        response = await ask(judged_stack, QUESTION)
        assert response.status == spb.ANSWER_STATUS_ANSWERED
        assert response.sufficiency.answerability_effect == spb.ANSWERABILITY_EFFECT_JUDGE_CONFIRMED
        assert response.sufficiency.answerability_judge_model == "checker-7b"
        call = judge_server.requests[seen]
        assert questions(call.messages) == [QUESTION]
        assert "IPC_379_0" in [i for i, _ in evidence_blocks(call.messages)]

    async def test_judge_no_refuses(
        self, judged_stack: Stack, judge_server: FakeOpenAIServer
    ) -> None:
        judge_server.script(Reply("1: no"))
        response = await ask(judged_stack, QUESTION)
        assert response.answer == REFUSAL
        assert response.status == spb.ANSWER_STATUS_REFUSED_INSUFFICIENT_EVIDENCE
        assert (
            response.sufficiency.failed_requirement
            == spb.SUFFICIENCY_REQUIREMENT_ANSWERING_SENTENCE
        )
        assert response.sufficiency.answerability_effect == spb.ANSWERABILITY_EFFECT_JUDGE_REFUSED

    @pytest.mark.parametrize(
        "behaviour", [Delay(5.0, Reply("1: yes")), Reply("yes")], ids=["slow", "malformed"]
    )
    async def test_failing_judge_refuses(
        self, judged_stack: Stack, judge_server: FakeOpenAIServer, behaviour: Reply | Delay
    ) -> None:
        judge_server.script(behaviour)
        response = await ask(judged_stack, QUESTION)
        assert response.answer == REFUSAL
        assert (
            response.sufficiency.answerability_effect == spb.ANSWERABILITY_EFFECT_JUDGE_UNAVAILABLE
        )

    async def test_a_question_naming_a_section_never_reaches_the_judge(
        self, judged_stack: Stack, judge_server: FakeOpenAIServer
    ) -> None:
        judge_server.script(Reply("1: no"))
        seen = len(judge_server.requests)
        response = await ask(judged_stack, "What does section 379 of the IPC say?")
        assert len(judge_server.requests) == seen
        assert response.sufficiency.answerability_judge_model == ""
        # The question passed the sufficiency check where the judge is asked, and was answered:
        # the judge, scripted to say no, would have refused it (not a refusal before that point).
        assert response.sufficiency.sufficient, response.sufficiency
        assert response.status == spb.ANSWER_STATUS_ANSWERED, response.refusal_reason
        assert "[IPC_379_" in response.answer


class TestSufficiencyJudgeSettings:
    async def test_a_claim_checker_prompt_stops_synthesis_at_start(
        self, judge_server: FakeOpenAIServer
    ) -> None:
        with pytest.raises(InvalidSettingError, match=r"^SYNTHESIS_JUDGE_PROMPT=document-claim"):
            SynthesisConfig.from_env(
                {
                    "SYNTHESIS_PORT": "0",
                    "SYNTHESIS_ANSWERABILITY": "both",
                    "SYNTHESIS_JUDGE_BASE_URL": judge_server.base_url,
                    "SYNTHESIS_JUDGE_MODEL": "bespoke-minicheck",
                    "SYNTHESIS_JUDGE_PROMPT": "document-claim",
                }
            )

"""A legal professional's audit through the real stack (docs/EVALUATION.md, "Then L"): a named
section is answered from its operative text, a list comes whole or not at all, a quote keeps
its ':' or ';', and no second section is appended for a word it merely uses.

Before rule L: "What is the punishment under section 376?" was answered with one proviso ("any
fine imposed under this sub-section shall be paid to the victim"), "What is grievous hurt?" with
the lead-in and the first of eight kinds, "Who is a public servant under section 21?" with a
lead-in ending "namely." whose list the corpus does not hold, "Is sedition punishable with
death?" with s.124A and s.304's "death"."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as spb

from services.common.refusal import REFUSAL
from stack.inprocess import start_in_process
from tests.integration.conftest import Stack
from tests.support.grpc_helpers import synthesize

pytestmark = pytest.mark.integration

_CITED = re.compile(r"\[(IPC_\w+?)\]")
# Every rule of L on, whatever the defaults (docs/EVALUATION.md, "Then L", says which shipped).
RULE_L = {
    "RETRIEVAL_OPERATIVE_TEXT": "true",
    "SYNTHESIS_OPERATIVE_TEXT": "true",
    "RETRIEVAL_WHOLE_LISTS": "true",
    "SYNTHESIS_WHOLE_LISTS": "true",
    "SYNTHESIS_EXTRACTIVE_KEEP_CLAUSE_MARKS": "true",
    "SYNTHESIS_EXTRACTIVE_COMPLEMENT_BY_TITLE": "true",
}


@pytest.fixture(scope="module")
async def stack(ipc_index: Path) -> AsyncIterator[Stack]:
    running = await start_in_process(ipc_index, settings=RULE_L)
    yield running
    await running.stop()


async def _cited(stack: Stack, question: str) -> tuple[spb.SynthesizeAnswerResponse, list[str]]:
    response = await synthesize(stack.synthesis, question)
    return response, _CITED.findall(response.answer)


class TestStatuteLayout:
    async def test_rpc_a_named_sections_punishment_is_its_operative_text(
        self, stack: Stack
    ) -> None:
        response, cited = await _cited(stack, "What is the punishment under section 376?")

        assert response.status == spb.ANSWER_STATUS_ANSWERED, response.answer
        assert cited[:3] == ["IPC_376_0", "IPC_376_1", "IPC_376_2"], response.answer
        assert "IPC_376_4" not in cited
        # The operative text is evidence although retrieval ranked the provisos above it.
        assert {"IPC_376_0", "IPC_376_1", "IPC_376_2"} <= {e.semantic_id for e in response.evidence}

    async def test_rpc_what_a_section_says_is_its_definition_and_descriptions(
        self, stack: Stack
    ) -> None:
        response, cited = await _cited(stack, "What does section 375 say?")

        assert response.status == spb.ANSWER_STATUS_ANSWERED, response.answer
        assert cited[:8] == [f"IPC_375_{n}" for n in range(8)], response.answer
        # The lead-in keeps its colon: the reader sees the descriptions follow.
        assert "seven descriptions: [IPC_375_0]\nAgainst her will [IPC_375_1]." in response.answer

    async def test_rpc_a_list_is_quoted_whole(self, stack: Stack) -> None:
        response, cited = await _cited(stack, "What is grievous hurt?")

        assert response.status == spb.ANSWER_STATUS_ANSWERED, response.answer
        assert [c for c in cited if c.startswith("IPC_320_")] == [f"IPC_320_{n}" for n in range(8)]

    async def test_rpc_a_lead_in_whose_list_the_corpus_lacks_is_not_an_answer(
        self, stack: Stack
    ) -> None:
        response = await synthesize(stack.synthesis, "Who is a public servant under section 21?")

        assert response.answer == REFUSAL
        assert "namely" not in response.answer

    async def test_rpc_a_list_item_comes_after_its_lead_in(self, stack: Stack) -> None:
        response, cited = await _cited(stack, "What is the right of private defence?")

        assert response.status == spb.ANSWER_STATUS_ANSWERED, response.answer
        assert "IPC_97_1" not in cited or cited[cited.index("IPC_97_1") - 1] == "IPC_97_0"

        response, cited = await _cited(
            stack, "Whom may a person defend under the right of private defence?"
        )
        assert cited.index("IPC_97_0") + 1 == cited.index("IPC_97_1"), response.answer
        assert "human body; [IPC_97_0]\nThe property" in response.answer

    async def test_rpc_no_section_is_appended_for_a_word_it_only_uses(self, stack: Stack) -> None:
        response, cited = await _cited(stack, "Is sedition punishable with death?")

        assert response.status == spb.ANSWER_STATUS_ANSWERED, response.answer
        assert cited == ["IPC_124A_0"], response.answer

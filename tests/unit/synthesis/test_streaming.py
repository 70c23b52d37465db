"""StreamAnswer's events: evidence, validated sentences, one final event; fail closed with retract.

The OpenAI path runs the real openai client over loopback SSE against the fake server, with
drafts judged by the real validator engine (EngineValidator).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping

from services.common.evidence import Chunk
from services.common.refusal import REFUSAL
from services.common.validation import Verdict
from services.synthesis.extractive import ExtractiveGenerator
from services.synthesis.openai_generator import OpenAIGenerator
from services.synthesis.pipeline import (
    PipelineSettings,
    SynthesisPipeline,
    SynthesisRequest,
    SynthesisStatus,
)
from services.synthesis.streaming import (
    EvidenceEvent,
    FinishedEvent,
    SentenceEvent,
    StreamEvent,
    stream_answer,
)
from tests.support.fake_openai import FakeOpenAIServer, Messages, Reply, evidence_blocks
from tests.unit.synthesis.fakes import EngineValidator, FakeRetriever, RuleValidator, scored

CHEATING = "What is the punishment for cheating under section 420?"
CHEATING_IDS = ("IPC_420_0", "IPC_415_0", "IPC_417_0")


async def collect(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in stream]


def finished(events: list[StreamEvent]) -> FinishedEvent:
    assert isinstance(events[-1], FinishedEvent)
    assert sum(isinstance(e, FinishedEvent) for e in events) == 1
    return events[-1]


def sentences(events: list[StreamEvent]) -> list[SentenceEvent]:
    return [e for e in events if isinstance(e, SentenceEvent)]


def quote_evidence(*numbers: int) -> object:
    """A draft quoting evidence blocks ``numbers`` (1-based), each cited by its id."""

    def draft(messages: Messages) -> str:
        blocks = evidence_blocks(messages)
        return " ".join(f"{blocks[n - 1][1].rstrip(' .;:')} [{blocks[n - 1][0]}]." for n in numbers)

    return draft


class TestExtractive:
    async def test_events_are_evidence_then_each_sentence_then_the_result(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        synth = SynthesisPipeline(
            FakeRetriever(scored(ipc, *CHEATING_IDS)), EngineValidator(), ExtractiveGenerator()
        )
        reference = await synth.answer(SynthesisRequest(CHEATING, top_k=3))

        events = await collect(stream_answer(synth, SynthesisRequest(CHEATING, top_k=3)))

        assert isinstance(events[0], EvidenceEvent)
        assert [s.chunk.semantic_id for s in events[0].evidence] == list(CHEATING_IDS)
        end = finished(events)
        assert end.result.status is SynthesisStatus.ANSWERED and not end.retract
        assert end.result.answer == reference.answer
        sent = sentences(events)
        assert [s.index for s in sent] == list(range(len(sent))) and end.sentences_sent == len(sent)
        assert " ".join(s.text for s in sent) == " ".join(end.result.answer.split())
        for s in sent:  # every citation resolved to the exact evidence sentence it names
            assert s.citations and all(f"[{c.semantic_id}]" in s.text for c in s.citations)
            assert all(c.text == ipc[c.semantic_id].text for c in s.citations)
            assert all(c.answer_sentences == (s.index,) for c in s.citations)

    async def test_insufficient_evidence_sends_no_sentence(self, ipc: Mapping[str, Chunk]) -> None:
        synth = SynthesisPipeline(
            FakeRetriever(scored(ipc, "IPC_378_0")), RuleValidator(), ExtractiveGenerator()
        )

        events = await collect(
            stream_answer(synth, SynthesisRequest("What is the punishment for bigamy?"))
        )

        assert [type(e) for e in events] == [EvidenceEvent, FinishedEvent]
        end = finished(events)
        assert end.result.answer == REFUSAL and not end.retract
        assert end.result.status is SynthesisStatus.REFUSED_INSUFFICIENT_EVIDENCE


class TestIncremental:
    def synth(self, ipc: Mapping[str, Chunk], llm: OpenAIGenerator) -> SynthesisPipeline:
        return SynthesisPipeline(
            FakeRetriever(scored(ipc, *CHEATING_IDS)),
            EngineValidator(),
            llm,
            PipelineSettings(generation_timeout_s=10),
        )

    async def test_the_first_sentence_arrives_before_the_draft_ends(
        self, ipc: Mapping[str, Chunk], fake_llm: FakeOpenAIServer, llm: OpenAIGenerator
    ) -> None:
        fake_llm.script(Reply(quote_evidence(1, 2), token_delay_s=0.01))
        arrivals: list[tuple[StreamEvent, float]] = []

        async for event in stream_answer(self.synth(ipc, llm), SynthesisRequest(CHEATING)):
            arrivals.append((event, time.monotonic()))

        events = [e for e, _ in arrivals]
        end = finished(events)
        assert end.result.status is SynthesisStatus.ANSWERED, end.result.refusal_reason
        assert not end.retract and end.sentences_sent == 2
        first = next(t for e, t in arrivals if isinstance(e, SentenceEvent))
        (log,) = fake_llm.streams
        assert log.completed and first < log.last_write  # sent while tokens were still coming
        assert [s.text for s in sentences(events)] == [
            s.text
            for s in end.result.validation.sentences  # type: ignore[union-attr]
        ]
        assert fake_llm.requests[0].body["stream"] is True

    async def test_a_sentence_that_fails_stops_the_draft_and_retracts(
        self, ipc: Mapping[str, Chunk], fake_llm: FakeOpenAIServer, llm: OpenAIGenerator
    ) -> None:
        def draft(messages: Messages) -> str:
            good = quote_evidence(1)(messages)
            long_tail = " ".join(["Whoever cheats is also fined heavily [IPC_420_0]."] * 20)
            return f"{good} Cheating is punished with death [IPC_420_0]. {long_tail}"

        fake_llm.script(Reply(draft, token_delay_s=0.005))

        events = await collect(stream_answer(self.synth(ipc, llm), SynthesisRequest(CHEATING)))

        end = finished(events)
        assert end.result.answer == REFUSAL
        assert end.result.status is SynthesisStatus.REFUSED_VALIDATION_FAILED
        assert end.retract and end.sentences_sent == 1 == len(sentences(events))
        await asyncio.sleep(0.2)
        (log,) = fake_llm.streams
        assert not log.completed  # generation was stopped, not read to the end

    async def test_a_whole_answer_rule_failing_after_sentences_retracts_them(
        self, ipc: Mapping[str, Chunk], fake_llm: FakeOpenAIServer, llm: OpenAIGenerator
    ) -> None:
        # A lead-in passes the sentence-level checks (a meta-statement needs no citation), but
        # an answer citing nothing at all fails the whole-answer rule (NO_CITATION).
        fake_llm.script(Reply("Based on the provided documents, here is the answer:"))

        events = await collect(stream_answer(self.synth(ipc, llm), SynthesisRequest(CHEATING)))

        end = finished(events)
        assert end.result.answer == REFUSAL
        assert end.result.status is SynthesisStatus.REFUSED_VALIDATION_FAILED
        assert end.retract and end.sentences_sent == len(sentences(events)) == 1

    async def test_a_lead_in_is_validated_with_the_sentence_it_introduces(
        self, ipc: Mapping[str, Chunk], fake_llm: FakeOpenAIServer, llm: OpenAIGenerator
    ) -> None:
        # Alone, "... as follows:" is a last sentence stating something without a citation
        # (NO_CITATION); in the whole answer it is an exempt lead-in, so the stream must agree.
        def draft(messages: Messages) -> str:
            return f"Section 420 punishes cheating as follows:\n{quote_evidence(1)(messages)}"

        fake_llm.script(Reply(draft, token_delay_s=0.002), Reply(draft))
        synth = self.synth(ipc, llm)

        events = await collect(stream_answer(synth, SynthesisRequest(CHEATING)))
        unary = await synth.answer(SynthesisRequest(CHEATING))

        end = finished(events)
        assert unary.status is SynthesisStatus.ANSWERED, unary.refusal_reason
        assert end.result.status is SynthesisStatus.ANSWERED, end.result.refusal_reason
        assert not end.retract and end.sentences_sent == 2
        streamed = sentences(events)
        assert streamed[0].text == "Section 420 punishes cheating as follows:"
        assert not streamed[0].citations and streamed[1].citations
        assert [s.text for s in streamed] == [
            s.text
            for s in unary.validation.sentences  # type: ignore[union-attr]
        ]

    async def test_a_lead_in_that_ends_the_draft_fails_as_in_the_whole_answer(
        self, ipc: Mapping[str, Chunk], fake_llm: FakeOpenAIServer, llm: OpenAIGenerator
    ) -> None:
        fake_llm.script(
            Reply(lambda m: f"{quote_evidence(1)(m)}\nSection 420 also provides as follows:")
        )

        events = await collect(stream_answer(self.synth(ipc, llm), SynthesisRequest(CHEATING)))

        end = finished(events)
        assert end.result.status is SynthesisStatus.REFUSED_VALIDATION_FAILED
        assert end.retract and end.sentences_sent == 1
        assert "NO_CITATION" in end.result.refusal_reason

    async def test_a_refusal_after_claims_is_never_sent_and_retracts_them(
        self, ipc: Mapping[str, Chunk], fake_llm: FakeOpenAIServer, llm: OpenAIGenerator
    ) -> None:
        fake_llm.script(Reply(lambda m: f"{quote_evidence(1)(m)} {REFUSAL}"))

        events = await collect(stream_answer(self.synth(ipc, llm), SynthesisRequest(CHEATING)))

        end = finished(events)
        assert end.result.answer == REFUSAL
        assert end.result.status is SynthesisStatus.REFUSED_VALIDATION_FAILED
        assert all(REFUSAL not in s.text for s in sentences(events))
        assert end.retract and end.sentences_sent == 1

    async def test_a_draft_that_is_the_refusal_is_the_generator_declining(
        self, ipc: Mapping[str, Chunk], fake_llm: FakeOpenAIServer, llm: OpenAIGenerator
    ) -> None:
        fake_llm.script(Reply(REFUSAL))

        events = await collect(stream_answer(self.synth(ipc, llm), SynthesisRequest(CHEATING)))

        end = finished(events)
        assert end.result.refusal_code == "GENERATOR_DECLINED"
        assert not sentences(events) and not end.retract

    async def test_the_final_result_is_what_answer_returns(
        self, ipc: Mapping[str, Chunk], fake_llm: FakeOpenAIServer, llm: OpenAIGenerator
    ) -> None:
        fake_llm.script(Reply(quote_evidence(1, 3)))
        synth = self.synth(ipc, llm)
        unary = await synth.answer(SynthesisRequest(CHEATING))

        end = finished(await collect(stream_answer(synth, SynthesisRequest(CHEATING))))

        assert end.result.answer == unary.answer and end.result.status is unary.status
        assert end.result.validation is not None
        assert end.result.validation.verdict is Verdict.GROUNDED

    async def test_closing_the_stream_cancels_the_generation(
        self, ipc: Mapping[str, Chunk], fake_llm: FakeOpenAIServer, llm: OpenAIGenerator
    ) -> None:
        def draft(messages: Messages) -> str:
            return " ".join([quote_evidence(1)(messages)] * 30)

        fake_llm.script(Reply(draft, token_delay_s=0.005))
        stream = stream_answer(self.synth(ipc, llm), SynthesisRequest(CHEATING))

        async for event in stream:
            if isinstance(event, SentenceEvent):
                break
        await stream.aclose()  # what gRPC does when the client cancels
        await asyncio.sleep(0.3)

        (log,) = fake_llm.streams
        assert not log.completed

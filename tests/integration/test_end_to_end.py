"""The three real services over real loopback channels: answers, refusals, bad input, validator."""

from __future__ import annotations

import logging
from pathlib import Path

import grpc
import pytest
from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
from grounded.retrieval.v1 import retrieval_service_pb2_grpc as rpb_grpc
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grounded.type.v1 import evidence_pb2, validation_pb2
from grounded.validator.v1 import validator_service_pb2 as vpb
from grounded.validator.v1 import validator_service_pb2_grpc as vpb_grpc

from services.common.refusal import REFUSAL
from services.retrieval.corpus import load_documents
from tests.integration.conftest import Stack
from tests.support.grpc_helpers import error_reason, field_violations

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


async def _ask(stack: Stack, question: str, **kwargs: object) -> spb.SynthesizeAnswerResponse:
    async with grpc.aio.insecure_channel(stack.synthesis) as channel:
        stub = spb_grpc.SynthesisServiceStub(channel)
        return await stub.SynthesizeAnswer(
            spb.SynthesizeAnswerRequest(question=question, **kwargs),
            timeout=30,  # type: ignore[arg-type]
        )


def _parts(count: int) -> str:
    """A question of ``count`` parts ("What is theft, and what is robbery, and ...?")."""
    offences = ("theft", "robbery", "extortion", "cheating", "dacoity", "murder", "forgery")
    offences += ("bribery", "kidnapping", "defamation")
    return ", and ".join(f"what is {o}" for o in offences[:count]).capitalize() + "?"


def _sentences(count: int) -> str:
    """``count`` separate questions ("What is theft? What is robbery? ...")."""
    offences = ("theft", "robbery", "extortion", "cheating", "dacoity", "murder", "forgery")
    offences += ("bribery", "kidnapping", "defamation")
    return " ".join(f"What is {o}?" for o in offences[:count])


class TestHowTheInputIsRead:
    """Then S (docs/EVALUATION.md): the response says how the input was read, a five-word claim
    is a statement, and separate question sentences count against the limit of 8."""

    @pytest.mark.parametrize(
        ("question", "kind"),
        [
            ("What is the punishment for theft?", spb.INPUT_KIND_QUESTION),
            ("punishment for theft", spb.INPUT_KIND_QUESTION),
            # The audit's claim of five words, read as a question and never judged before.
            ("Theft is punishable with death.", spb.INPUT_KIND_STATEMENT),
            ("The punishment for theft is life imprisonment.", spb.INPUT_KIND_STATEMENT),
        ],
    )
    async def test_synthesize_and_stream_say_how_the_input_was_read(
        self, stack: Stack, question: str, kind: int
    ) -> None:
        response = await _ask(stack, question)
        async with grpc.aio.insecure_channel(stack.synthesis) as channel:
            stream = spb_grpc.SynthesisServiceStub(channel).StreamAnswer(
                spb.SynthesizeAnswerRequest(question=question), timeout=30
            )
            events = [event async for event in stream]

        assert response.input_kind == kind
        assert events[0].evidence.input_kind == kind
        assert events[-1].finished.response.input_kind == kind
        if kind == spb.INPUT_KIND_STATEMENT:
            # Judged by the entailment model: a verdict, which a question never has.
            assert response.sufficiency.statement_verdict != spb.STATEMENT_VERDICT_UNSPECIFIED
        else:
            assert response.sufficiency.statement_verdict == spb.STATEMENT_VERDICT_UNSPECIFIED

    async def test_synthesize_separate_questions_are_each_answered(self, stack: Stack) -> None:
        # One retrieval for both quoted s.390 alone ("When theft is robbery"): no definition
        # of theft.
        response = await _ask(stack, "What is theft? What is robbery?")

        assert response.status == spb.ANSWER_STATUS_ANSWERED, response.refusal_reason
        assert response.validation.verdict == validation_pb2.VALIDATION_VERDICT_GROUNDED
        assert {"IPC_378", "IPC_390"} <= {d.doc_id for d in response.citations}, response.answer

    @pytest.mark.parametrize(
        "question",
        [_sentences(9), " ".join(f"Is {o} a crime?" for o in ("theft", "robbery", "murder") * 3)],
        ids=["parts", "answered-together"],
    )
    async def test_synthesize_nine_separate_questions_are_invalid_on_question(
        self, stack: Stack, question: str
    ) -> None:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _ask(stack, question)

        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error_reason(info.value) == "INVALID_INPUT"
        assert "asks 9 questions in one" in field_violations(info.value)["question"]


class TestSynthesizeAnswer:
    async def test_synthesize_section_420_cites_ipc_420(self, stack: Stack) -> None:
        response = await _ask(
            stack, "What is the punishment for cheating under section 420?", top_k=5
        )
        assert response.status == spb.ANSWER_STATUS_ANSWERED, response.refusal_reason
        cited = set(response.validation.cited_ids)
        assert any(c.startswith("IPC_420_") for c in cited), response.answer
        evidence_ids = {p.semantic_id for p in response.evidence}
        assert cited and cited <= evidence_ids
        assert "[IPC_420_" in response.answer
        assert response.validation.verdict == validation_pb2.VALIDATION_VERDICT_GROUNDED
        assert any(d.doc_id == "IPC_420" for d in response.citations)

    async def test_synthesize_citations_lead_back_to_the_exact_characters(
        self, stack: Stack
    ) -> None:
        response = await _ask(stack, "What is the punishment for theft?", top_k=5)
        assert response.status == spb.ANSWER_STATUS_ANSWERED, response.refusal_reason
        sections = {
            d.doc_id: d.text
            for d in load_documents(ROOT / "data/corpora/indian_law/ipc.json", act="IPC")
        }
        assert response.citations, response.answer  # else the loop below checks nothing
        for document in response.citations:
            assert document.source.chapter and document.source.chapter_title
            assert document.citations, document
            for c in document.citations:
                assert sections[document.doc_id][c.char_start : c.char_end] == c.sentence
                section, n = c.semantic_id.removeprefix("IPC_").rsplit("_", 1)
                assert c.locator == f"IPC/{section}#{n}"
                assert list(c.answer_sentences)  # every citation names the sentence citing it

    async def test_synthesize_unanswerable_question_is_refused_exactly(self, stack: Stack) -> None:
        response = await _ask(stack, "What is the capital of France?")
        assert response.answer == REFUSAL
        assert response.status != spb.ANSWER_STATUS_ANSWERED
        assert response.refusal_reason

    @pytest.mark.parametrize(
        ("question", "sections"),
        [
            ("What is the difference between theft and extortion?", {"IPC_378", "IPC_383"}),
            (
                "How does wrongful confinement differ from wrongful restraint?",
                {"IPC_339", "IPC_340"},
            ),
        ],
    )
    async def test_synthesize_a_comparison_cites_the_section_of_each_side(
        self, stack: Stack, question: str, sections: set[str]
    ) -> None:
        # One retrieval for the whole question finds s.390 (robbery) and no definition; the
        # per-term retrievals over the real index find each side's own section.
        response = await _ask(stack, question)

        assert response.status == spb.ANSWER_STATUS_ANSWERED, response.refusal_reason
        assert response.validation.verdict == validation_pb2.VALIDATION_VERDICT_GROUNDED
        assert sections <= {d.doc_id for d in response.citations}, response.answer
        assert len(response.sufficiency.compared_terms) == 2

    @pytest.mark.parametrize(
        ("question", "cited"),
        [
            ("difference between section 379 and section 380", ["IPC_379_0", "IPC_380_0"]),
            ("compare sections 323 and 325 IPC", ["IPC_323_0", "IPC_325_0"]),
            ("how does section 302 differ from section 304", ["IPC_302_0", "IPC_304_0"]),
            # Rule Q: numbers before the act, as lawyers write them (refused for "379" before).
            ("What is the difference between 379 and 380 IPC?", ["IPC_379_0", "IPC_380_0"]),
        ],
    )
    async def test_synthesize_a_comparison_of_sections_quotes_each_operative_text(
        self, stack: Stack, question: str, cited: list[str]
    ) -> None:
        # Refused before ("Then O", docs/EVALUATION.md): the generator declined, or s.302 and
        # s.304 ("Punishment for ...") were ranked out of the evidence.
        response = await _ask(stack, question)

        assert response.status == spb.ANSWER_STATUS_ANSWERED, response.refusal_reason
        assert response.validation.verdict == validation_pb2.VALIDATION_VERDICT_GROUNDED
        assert list(dict.fromkeys(response.validation.cited_ids)) == cited, response.answer

    @pytest.mark.parametrize("question", ["What do sections 378 to 382 IPC say?", "ss. 378-382"])
    async def test_synthesize_a_short_range_quotes_every_section_in_it(
        self, stack: Stack, question: str
    ) -> None:
        # Rule Q ("Then Q", docs/EVALUATION.md): 378 alone was read, 382 became a key term.
        response = await _ask(stack, question)

        assert response.status == spb.ANSWER_STATUS_ANSWERED, response.refusal_reason
        assert response.validation.verdict == validation_pb2.VALIDATION_VERDICT_GROUNDED
        cited = list(dict.fromkeys(response.validation.cited_ids))
        assert cited == [f"IPC_{n}_0" for n in range(378, 383)], response.answer

    async def test_synthesize_a_comparison_with_an_absent_section_names_it(
        self, stack: Stack
    ) -> None:
        response = await _ask(stack, "What is the difference between section 379 and section 999?")

        assert response.answer == REFUSAL
        assert "section 999" in response.refusal_reason
        assert "section 379" not in response.refusal_reason

    @pytest.mark.parametrize(
        ("request_kwargs", "field"),
        [
            ({"question": ""}, "question"),
            ({"question": "   "}, "question"),
            ({"question": "theft " * 1000}, "question"),
            ({"question": "What is theft?", "top_k": -1}, "top_k"),
            ({"question": "What is theft?", "top_k": 101}, "top_k"),
            # More parts than MAX_QUESTION_PARTS (8), or parts x top_k over 200.
            ({"question": _parts(9)}, "question"),
            ({"question": _parts(3), "top_k": 67}, "top_k"),
        ],
    )
    async def test_synthesize_bad_input_is_invalid_argument_with_field(
        self, stack: Stack, request_kwargs: dict[str, object], field: str
    ) -> None:
        async with grpc.aio.insecure_channel(stack.synthesis) as channel:
            stub = spb_grpc.SynthesisServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.SynthesizeAnswer(
                    spb.SynthesizeAnswerRequest(**request_kwargs), timeout=10
                )  # type: ignore[arg-type]
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert field in field_violations(info.value)
        assert error_reason(info.value) == "INVALID_INPUT"

    async def test_synthesize_megabyte_filter_values_are_the_callers_bad_input(
        self, stack: Stack, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The audit's request: three 1 MB act codes. Retrieval's error echoed them whole, too
        large for gRPC to bring back, and synthesis answered UNAVAILABLE with an ERROR line
        (DEPENDENCY_UNAVAILABLE): bad input reported as an outage. The front door answers."""
        filters = evidence_pb2.EvidenceFilters(acts=["A" * 1_000_000] * 3)
        with caplog.at_level(logging.INFO):
            async with grpc.aio.insecure_channel(stack.synthesis) as channel:
                stub = spb_grpc.SynthesisServiceStub(channel)
                with pytest.raises(grpc.aio.AioRpcError) as info:
                    await stub.SynthesizeAnswer(
                        spb.SynthesizeAnswerRequest(question="What is theft?", filters=filters),
                        timeout=30,
                    )
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error_reason(info.value) == "INVALID_INPUT"
        assert field_violations(info.value) == {
            f"filters.acts[{i}]": "must be at most 256 characters (got 1,000,000)" for i in range(3)
        }
        assert len(info.value.details() or "") < 400
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
        # Nothing logged repeats the values: the longest line is far from their megabytes.
        longest = max(len(r.getMessage()) + len(str(r.__dict__)) for r in caplog.records)
        assert longest < 10_000
        methods = [getattr(r, "method", "") for r in caplog.records if r.getMessage() == "rpc"]
        assert "RetrievePassages" not in methods  # rejected before retrieval was asked

    async def test_synthesize_names_an_unoffered_generator_with_the_other_bad_fields(
        self, stack: Stack, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The in-process stack offers the extractive generator only. The caller is told so in
        the contract's names; what the operator would set is in the server's log only."""
        caplog.set_level(logging.INFO)
        async with grpc.aio.insecure_channel(stack.synthesis) as channel:
            stub = spb_grpc.SynthesisServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.SynthesizeAnswer(
                    spb.SynthesizeAnswerRequest(
                        question="", generator=spb.GENERATOR_KIND_OPENAI, top_k=101
                    ),
                    timeout=10,
                )
        violations = field_violations(info.value)
        assert set(violations) == {"question", "top_k", "generator"}
        assert violations["generator"] == (
            "GENERATOR_KIND_OPENAI is not configured on this server "
            "(offered: GENERATOR_KIND_EXTRACTIVE)"
        )
        logged = [r.getMessage() for r in caplog.records]
        assert any("SYNTHESIS_OPENAI_BASE_URL" in line for line in logged), logged

    async def test_synthesize_request_id_is_echoed(self, stack: Stack) -> None:
        async with grpc.aio.insecure_channel(stack.synthesis) as channel:
            stub = spb_grpc.SynthesisServiceStub(channel)
            call = stub.SynthesizeAnswer(
                spb.SynthesizeAnswerRequest(question="What is theft?"),
                timeout=30,
                metadata=(("x-request-id", "test-req-42"),),
            )
            await call
            metadata = dict(await call.initial_metadata())
        assert metadata.get("x-request-id") == "test-req-42"


class TestRetrievePassages:
    async def test_retrieve_passages_carry_provenance(self, stack: Stack) -> None:
        async with grpc.aio.insecure_channel(stack.retrieval) as channel:
            stub = rpb_grpc.RetrievalServiceStub(channel)
            response = await stub.RetrievePassages(
                rpb.RetrievePassagesRequest(query="punishment for theft", top_k=5), timeout=30
            )
        assert 0 < len(response.passages) <= 5
        top = response.passages[0]
        assert top.semantic_id.startswith("IPC_") and top.doc_id.startswith("IPC_")
        assert top.source.act == "IPC" and top.section and top.title
        assert top.char_end > top.char_start
        assert response.index_version

    async def test_retrieve_bad_input_reports_every_field(self, stack: Stack) -> None:
        async with grpc.aio.insecure_channel(stack.retrieval) as channel:
            stub = rpb_grpc.RetrievalServiceStub(channel)
            request = rpb.RetrievePassagesRequest(query="", top_k=1000)
            request.filters.acts.append("NOPE")
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.RetrievePassages(request, timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert {"query", "top_k", "filters.acts[0]"} <= set(field_violations(info.value))


def _evidence(*items: tuple[str, str]) -> list[evidence_pb2.Passage]:
    return [evidence_pb2.Passage(semantic_id=i, text=t) for i, t in items]


_CHEATING = (
    "IPC_420_0",
    "Whoever cheats and thereby dishonestly induces the person deceived to deliver any property "
    "shall be punished with imprisonment of either description for a term which may extend to "
    "seven years, and shall also be liable to fine.",
)


class TestValidateAnswer:
    async def _validate(
        self, stack: Stack, answer: str, evidence: list[evidence_pb2.Passage]
    ) -> vpb.ValidateAnswerResponse:
        async with grpc.aio.insecure_channel(stack.validator) as channel:
            stub = vpb_grpc.ValidatorServiceStub(channel)
            return await stub.ValidateAnswer(
                vpb.ValidateAnswerRequest(answer=answer, evidence=evidence), timeout=10
            )

    async def test_validate_accepts_cited_supported_answer(self, stack: Stack) -> None:
        # A paraphrase, not a quote, so the entailment model judges it. (Until entailment v4 the
        # sentence here was "... shall be punished with imprisonment which may extend to seven
        # years and fine", which reads the statute's "liable to fine" as a fine imposed with the
        # term: v3 accepted it at P(entailment) 0.49, v4 calls it a contradiction; model card.)
        answer = (
            "Cheating, by dishonestly inducing someone to deliver property, is punishable with "
            "imprisonment of up to seven years, and the offender is also liable to a fine "
            "[IPC_420_0]."
        )
        response = await self._validate(stack, answer, _evidence(_CHEATING))
        assert response.verdict == validation_pb2.VALIDATION_VERDICT_GROUNDED

    async def test_validate_rejects_id_not_in_evidence(self, stack: Stack) -> None:
        answer = "Cheating is punished with imprisonment up to seven years and fine [IPC_999_0]."
        response = await self._validate(stack, answer, _evidence(_CHEATING))
        assert response.verdict == validation_pb2.VALIDATION_VERDICT_NOT_GROUNDED
        assert list(response.invalid_citations) == ["IPC_999_0"]

    async def test_validate_rejects_answer_without_citations(self, stack: Stack) -> None:
        answer = "Cheating is punished with imprisonment up to seven years and fine."
        response = await self._validate(stack, answer, _evidence(_CHEATING))
        assert response.verdict == validation_pb2.VALIDATION_VERDICT_NOT_GROUNDED
        assert response.sentences[0].reason == validation_pb2.VALIDATION_REASON_NO_CITATION

    async def test_validate_accepts_exact_refusal(self, stack: Stack) -> None:
        response = await self._validate(stack, REFUSAL, _evidence(_CHEATING))
        assert response.verdict == validation_pb2.VALIDATION_VERDICT_REFUSAL

    async def test_validate_bad_input_names_fields(self, stack: Stack) -> None:
        evidence = _evidence(("", "text"), ("A", "x"), ("A", "y"))
        async with grpc.aio.insecure_channel(stack.validator) as channel:
            stub = vpb_grpc.ValidatorServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.ValidateAnswer(
                    vpb.ValidateAnswerRequest(answer="x" * 70_000, evidence=evidence), timeout=10
                )
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert {"answer", "evidence[0].semantic_id", "evidence[2].semantic_id"} <= set(
            field_violations(info.value)
        )

"""Synthesis proto conversion: status mapping, grouped citations, snippets, sufficiency, usage."""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Mapping
from pathlib import Path

import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as pb
from grounded.type.v1 import evidence_pb2

from services.common.errors import InvalidInputError
from services.common.evidence import Chunk, ScoredChunk, StageSkip
from services.common.language.text import NOT_BLANK
from services.common.refusal import REFUSAL
from services.synthesis import convert, pipeline
from services.synthesis.generation import GenerationFailure, TokenUsage
from services.synthesis.pipeline import (
    PipelineSettings,
    SynthesisPipeline,
    SynthesisRequest,
    SynthesisResult,
    SynthesisStatus,
)
from services.synthesis.routing import ModelChoice, ModelGenerator
from services.synthesis.sources import RelationKind, SourceRelation
from services.synthesis.streaming import stream_answer
from services.synthesis.sufficiency import Requirement
from tests.unit.synthesis.fakes import (
    EngineValidator,
    FakeRetriever,
    ScriptedGenerator,
    chunk,
    scored,
)

CHEATING = "What is the punishment for cheating under section 420?"


def quote(ipc: Mapping[str, Chunk], *ids: str) -> str:
    return " ".join(f"{ipc[i].text.rstrip(' .;')} [{i}]." for i in ids)


async def answer(
    evidence: tuple[ScoredChunk, ...] | list[ScoredChunk],
    draft: str,
    question: str = CHEATING,
) -> SynthesisResult:
    synth = SynthesisPipeline(
        FakeRetriever(evidence), EngineValidator(), ScriptedGenerator(draft), PipelineSettings()
    )
    return await synth.answer(SynthesisRequest(question, top_k=5))


class TestResultToProto:
    @pytest.mark.parametrize("status", list(SynthesisStatus))
    async def test_result_to_proto_maps_every_status(
        self, ipc: Mapping[str, Chunk], status: SynthesisStatus
    ) -> None:
        base = await answer(scored(ipc, "IPC_420_0"), quote(ipc, "IPC_420_0"))
        result = dataclasses.replace(base, status=status)

        proto = convert.result_to_proto(result)

        assert pb.AnswerStatus.Name(proto.status) == f"ANSWER_STATUS_{status.value}"

    async def test_result_to_proto_groups_citations_by_document(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        evidence = scored(ipc, "IPC_420_0", "IPC_415_0", "IPC_417_0")
        result = await answer(evidence, quote(ipc, "IPC_420_0", "IPC_415_0", "IPC_417_0"))
        assert result.answered, result.refusal_reason

        proto = convert.result_to_proto(result)

        assert [d.doc_id for d in proto.citations] == ["IPC_420", "IPC_415", "IPC_417"]
        for document in proto.citations:
            (citation,) = document.citations
            source = ipc[citation.semantic_id]
            assert citation.semantic_id.startswith(f"{document.doc_id}_")
            assert citation.sentence == source.text
            assert (document.section, document.title) == (source.section, source.title)
            assert document.source.act == "IPC" and document.source.url == source.url
            assert "Bharatiya Nyaya Sanhita" in document.source.caveat  # the registry's note
            assert citation.score > 0
        assert proto.answer == result.answer
        assert proto.status == pb.ANSWER_STATUS_ANSWERED and proto.refusal_reason == ""

    async def test_result_to_proto_carries_the_page_and_extras_of_each_citation(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        paged = {
            i: dataclasses.replace(ipc[i], page=page, extra={"path": "ipc.pdf"})
            for i, page in (("IPC_420_0", 7), ("IPC_415_0", 2))
        }
        evidence = scored(paged, "IPC_420_0", "IPC_415_0")
        result = await answer(evidence, quote(paged, "IPC_420_0", "IPC_415_0"))
        assert result.answered, result.refusal_reason

        proto = convert.result_to_proto(result)

        for document in proto.citations:
            (citation,) = document.citations
            assert citation.page == paged[citation.semantic_id].page
            assert document.source.page == citation.page
            assert dict(document.source.extras) == {"path": "ipc.pdf"}
        assert [d.source.page for d in proto.citations] == [7, 2]

    async def test_result_to_proto_passes_retrievals_skipped_stages_through(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        evidence = scored(ipc, "IPC_420_0")
        synth = SynthesisPipeline(
            FakeRetriever(evidence, skipped={"rerank": StageSkip.DEADLINE}),
            EngineValidator(),
            ScriptedGenerator(quote(ipc, "IPC_420_0")),
            PipelineSettings(),
        )
        result = await synth.answer(SynthesisRequest(CHEATING, top_k=5))
        assert result.answered, result.refusal_reason
        assert result.skipped_stages == {"retrieval.rerank": StageSkip.DEADLINE}

        timings = {t.stage: t for t in convert.result_to_proto(result).timings}

        skipped = timings["retrieval.rerank"]
        assert (skipped.ran, skipped.skip_reason) == (
            False,
            evidence_pb2.STAGE_SKIP_REASON_DEADLINE,
        )
        assert timings["retrieval.dense"].ran and timings["total"].ran
        ran = [t for t in timings.values() if t.stage != "retrieval.rerank"]
        assert all(
            t.ran and t.skip_reason == evidence_pb2.STAGE_SKIP_REASON_UNSPECIFIED for t in ran
        )

    async def test_the_evidence_event_passes_retrievals_skipped_stages_through(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        synth = SynthesisPipeline(
            FakeRetriever(scored(ipc, "IPC_420_0"), skipped={"rerank": StageSkip.QUERY_TOO_LONG}),
            EngineValidator(),
            ScriptedGenerator(quote(ipc, "IPC_420_0")),
            PipelineSettings(),
        )
        first = await anext(stream_answer(synth, SynthesisRequest(CHEATING, top_k=5)))

        (skipped,) = [t for t in convert.event_to_proto(first).evidence.timings if not t.ran]

        assert skipped.stage == "retrieval.rerank"
        assert skipped.skip_reason == evidence_pb2.STAGE_SKIP_REASON_QUERY_TOO_LONG

    @pytest.mark.parametrize(
        ("question", "kind"),
        [
            (CHEATING, pb.INPUT_KIND_QUESTION),
            ("Whoever cheats shall be punished under section 420.", pb.INPUT_KIND_STATEMENT),
            ("Cheating is punishable with imprisonment.", pb.INPUT_KIND_STATEMENT),
        ],
    )
    async def test_every_response_and_the_evidence_event_say_how_the_input_was_read(
        self, ipc: Mapping[str, Chunk], question: str, kind: int
    ) -> None:
        evidence = scored(ipc, "IPC_420_0")
        answered = await answer(evidence, quote(ipc, "IPC_420_0"), question)
        refused = await answer(evidence, REFUSAL, question)
        synth = SynthesisPipeline(
            FakeRetriever(evidence),
            EngineValidator(),
            ScriptedGenerator(quote(ipc, "IPC_420_0")),
            PipelineSettings(),
        )
        first = await anext(stream_answer(synth, SynthesisRequest(question, top_k=5)))

        assert convert.result_to_proto(answered).input_kind == kind
        assert convert.result_to_proto(refused).input_kind == kind
        assert convert.event_to_proto(first).evidence.input_kind == kind

    async def test_result_to_proto_snippets_are_at_most_200_characters(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        assert len(ipc["IPC_415_0"].text) > 200  # the case this test exists for
        result = await answer(
            scored(ipc, "IPC_415_0"), quote(ipc, "IPC_415_0"), question="What does cheat mean?"
        )
        assert result.answered, result.refusal_reason

        (document,) = convert.result_to_proto(result).citations
        (citation,) = document.citations

        assert len(citation.snippet) <= 200
        assert citation.snippet.endswith("…")
        assert ipc["IPC_415_0"].text.startswith(citation.snippet[:-1].rstrip())

    async def test_result_to_proto_reports_the_failed_requirement(self) -> None:
        seed = ScoredChunk(chunk("IPC_420_0", "Section 420 deals with cheating."), 0.9)
        result = await answer([seed], "never used")

        proto = convert.result_to_proto(result)

        assert proto.answer == REFUSAL
        assert proto.status == pb.ANSWER_STATUS_REFUSED_INSUFFICIENT_EVIDENCE
        assert not proto.sufficiency.sufficient
        assert proto.sufficiency.failed_requirement == pb.SUFFICIENCY_REQUIREMENT_PENALTY_LANGUAGE
        assert proto.sufficiency.requirements[-1] == pb.SUFFICIENCY_REQUIREMENT_PENALTY_LANGUAGE
        assert proto.sufficiency.failure
        assert proto.sufficiency.intent == evidence_pb2.QUERY_INTENT_PUNISHMENT
        assert proto.refusal_code == pb.REFUSAL_CODE_INSUFFICIENT_EVIDENCE
        assert proto.refusal_reason and "INSUFFICIENT_EVIDENCE" not in proto.refusal_reason
        assert not proto.HasField("validation") and not proto.HasField("usage")

    async def test_result_to_proto_sufficient_has_no_failed_requirement(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        result = await answer(scored(ipc, "IPC_420_0"), quote(ipc, "IPC_420_0"))

        sufficiency = convert.result_to_proto(result).sufficiency

        assert sufficiency.sufficient
        assert sufficiency.failed_requirement == pb.SUFFICIENCY_REQUIREMENT_UNSPECIFIED
        assert pb.SUFFICIENCY_REQUIREMENT_EVIDENCE_PRESENT in sufficiency.requirements
        assert "IPC_420_0" in sufficiency.supporting_ids

    async def test_result_to_proto_names_the_compared_terms_of_a_comparison(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        evidence = scored(ipc, "IPC_378_0", "IPC_383_0")
        draft = quote(ipc, "IPC_378_0", "IPC_383_0")

        compared = await answer(
            evidence, draft, "What is the difference between theft and extortion?"
        )
        plain = await answer(scored(ipc, "IPC_420_0"), quote(ipc, "IPC_420_0"))

        report = convert.result_to_proto(compared).sufficiency
        assert report.sufficient, report.failure
        assert list(report.compared_terms) == ["theft", "extortion"]
        assert list(convert.result_to_proto(plain).sufficiency.compared_terms) == []

    @pytest.mark.parametrize(
        ("usage", "total"),
        [(TokenUsage(120, 30, 150), 150), (TokenUsage(120, 30, 0), 150)],
        ids=["reported-total", "missing-total"],
    )
    async def test_result_to_proto_reports_usage_with_total_and_endpoint_model(
        self, ipc: Mapping[str, Chunk], usage: TokenUsage, total: int
    ) -> None:
        base = await answer(scored(ipc, "IPC_420_0"), quote(ipc, "IPC_420_0"))
        result = dataclasses.replace(base, usage=usage, model="gpt-4o-mini-2024-07-18")

        proto = convert.result_to_proto(result)

        assert (proto.usage.prompt_tokens, proto.usage.completion_tokens) == (120, 30)
        assert proto.usage.total_tokens == total
        assert proto.usage.model == "gpt-4o-mini-2024-07-18"

    async def test_result_to_proto_without_an_llm_has_no_usage(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        result = await answer(scored(ipc, "IPC_420_0"), quote(ipc, "IPC_420_0"))

        assert not convert.result_to_proto(result).HasField("usage")

    @pytest.mark.parametrize("kind", list(RelationKind))
    async def test_result_to_proto_maps_every_source_relation_kind(
        self, ipc: Mapping[str, Chunk], kind: RelationKind
    ) -> None:
        base = await answer(scored(ipc, "IPC_420_0"), quote(ipc, "IPC_420_0"))
        relation = SourceRelation("IPC_379_0", "IPC_380_0", kind, "year: 3 in A, 7 in B")
        result = dataclasses.replace(base, source_relations=(relation,))

        (proto,) = convert.result_to_proto(result).source_relations

        assert (proto.first_semantic_id, proto.second_semantic_id) == ("IPC_379_0", "IPC_380_0")
        assert pb.SourceRelationKind.Name(proto.kind).startswith(
            f"SOURCE_RELATION_KIND_{kind.value}"
        )
        assert proto.description == "year: 3 in A, 7 in B"


class TestRequestFromProto:
    @pytest.mark.parametrize(
        ("generator", "default"),
        [
            (pb.GENERATOR_KIND_UNSPECIFIED, "extractive"),
            (pb.GENERATOR_KIND_EXTRACTIVE, "extractive"),
            (pb.GENERATOR_KIND_EXTRACTIVE, "openai"),
        ],
    )
    def test_request_from_proto_rejects_a_model_for_the_extractive_generator(
        self, generator: int, default: str
    ) -> None:
        request = pb.SynthesizeAnswerRequest(
            question="What is theft?", model="m", generator=generator
        )  # type: ignore[arg-type]

        with pytest.raises(InvalidInputError) as info:
            convert.request_from_proto(request, default_top_k=5, default_generator=default)

        (violation,) = info.value.violations
        assert violation.field == "model" and "extractive" in violation.description

    @pytest.mark.parametrize(
        ("generator", "default"),
        [
            (pb.GENERATOR_KIND_OPENAI, "extractive"),
            (pb.GENERATOR_KIND_UNSPECIFIED, "openai"),
            # Without the server's default (a parser-only caller) the check is left out.
            (pb.GENERATOR_KIND_EXTRACTIVE, None),
        ],
    )
    def test_request_from_proto_accepts_a_model_for_the_openai_generator(
        self, generator: int, default: str | None
    ) -> None:
        request = pb.SynthesizeAnswerRequest(
            question="What is theft?", model="m", generator=generator
        )  # type: ignore[arg-type]

        parsed = convert.request_from_proto(request, default_top_k=5, default_generator=default)

        assert parsed.question == "What is theft?"

    def test_request_from_proto_rejects_a_filter_value_longer_than_an_id(self) -> None:
        """The audit's request: three 1 MB act codes. Rejected here, at the front door, as the
        caller's bad input; before, retrieval's error echoed them whole, too large to come
        back, and synthesis answered UNAVAILABLE."""
        request = pb.SynthesizeAnswerRequest(
            question="What is theft?",
            filters=evidence_pb2.EvidenceFilters(
                acts=["IPC", *["A" * 1_000_000] * 3], doc_ids=["D" * 257, "D" * 256]
            ),
        )

        with pytest.raises(InvalidInputError) as info:
            convert.request_from_proto(request, default_top_k=5)

        assert [(v.field, v.description) for v in info.value.violations] == [
            ("filters.acts[1]", "must be at most 256 characters (got 1,000,000)"),
            ("filters.acts[2]", "must be at most 256 characters (got 1,000,000)"),
            ("filters.acts[3]", "must be at most 256 characters (got 1,000,000)"),
            ("filters.doc_ids[0]", "must be at most 256 characters (got 257)"),
        ]
        assert len(info.value.message) < 400

    def test_request_from_proto_passes_filter_values_of_an_id_length(self) -> None:
        request = pb.SynthesizeAnswerRequest(
            question="What is theft?",
            filters=evidence_pb2.EvidenceFilters(acts=["A" * 256], doc_ids=["D" * 256]),
        )

        parsed = convert.request_from_proto(request, default_top_k=5)

        assert (parsed.acts, parsed.doc_ids) == (("A" * 256,), ("D" * 256,))

    @pytest.mark.parametrize("question", ["", "   ", "\x00", "\u200b\u200b", "\u202e\n"])
    def test_request_from_proto_rejects_a_question_with_nothing_visible(
        self, question: str
    ) -> None:
        # Found by a new user: NUL or zero-width-only questions got a refusal where a
        # whitespace-only one got INVALID_ARGUMENT.
        request = pb.SynthesizeAnswerRequest(question=question)

        with pytest.raises(InvalidInputError) as info:
            convert.request_from_proto(request, default_top_k=5, default_generator=None)

        (violation,) = info.value.violations
        assert (violation.field, violation.description) == ("question", NOT_BLANK)

    @pytest.mark.parametrize("model", ["   ", "gpt-4o\n", "gpt\x00mini", "\u200b"])
    def test_request_from_proto_rejects_a_model_name_with_invisible_characters(
        self, model: str
    ) -> None:
        request = pb.SynthesizeAnswerRequest(
            question="What is theft?", model=model, generator=pb.GENERATOR_KIND_OPENAI
        )

        with pytest.raises(InvalidInputError) as info:
            convert.request_from_proto(request, default_top_k=5, default_generator="openai")

        (violation,) = info.value.violations
        assert violation.field == "model" and "not blank" in violation.description

    def test_request_from_proto_counts_the_question_as_it_will_be_searched(self) -> None:
        # U+FDFA is one character that NFKC turns into 18: 2,000 of them would be searched as
        # 36,000 characters past a 2,000-character limit.
        request = pb.SynthesizeAnswerRequest(question="\ufdfa" * 2000)

        with pytest.raises(InvalidInputError) as info:
            convert.request_from_proto(request, default_top_k=5, default_generator=None)

        (violation,) = info.value.violations
        assert violation.field == "question"
        assert "once normalised (NFKC), as searched (got 36000 from 2000)" in violation.description

    def test_a_generator_the_server_does_not_offer_is_named_beside_every_other_field(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        # Found by a new user: an empty question hid the generator, and the generator was then
        # called "unknown" without saying what would offer it.
        request = pb.SynthesizeAnswerRequest(
            question="", generator=pb.GENERATOR_KIND_OPENAI, model="m" * 201
        )

        with caplog.at_level(logging.INFO), pytest.raises(InvalidInputError) as info:
            convert.request_from_proto(
                request, default_top_k=5, default_generator="extractive", offered=("extractive",)
            )

        fields = {v.field: v.description for v in info.value.violations}
        assert set(fields) == {"question", "generator", "model"}
        # In the caller's terms (the enum's names); the server's settings stay in its log.
        assert fields["generator"] == (
            "GENERATOR_KIND_OPENAI is not configured on this server "
            "(offered: GENERATOR_KIND_EXTRACTIVE)"
        )
        logged = " ".join(r.getMessage() for r in caplog.records)
        assert "SYNTHESIS_OPENAI_BASE_URL" in logged

    @pytest.mark.parametrize("generator", [3, 7])
    def test_a_generator_outside_the_enum_is_refused_naming_those_offered(
        self, generator: int
    ) -> None:
        request = pb.SynthesizeAnswerRequest(question="What is theft?", generator=generator)  # type: ignore[arg-type]

        with pytest.raises(InvalidInputError) as info:
            convert.request_from_proto(
                request, default_top_k=5, default_generator="extractive", offered=("extractive",)
            )

        (violation,) = info.value.violations
        assert (violation.field, violation.description) == (
            "generator",
            f"unknown generator {generator}: not a GeneratorKind value; this server offers "
            "GENERATOR_KIND_EXTRACTIVE (unset: its default)",
        )

    @pytest.mark.parametrize(
        ("role", "named"), [(pb.TURN_ROLE_UNSPECIFIED, "TURN_ROLE_UNSPECIFIED"), (7, "7")]
    )
    def test_a_turn_without_a_role_is_refused_in_the_contracts_names(
        self, role: int, named: str
    ) -> None:
        # {"history":[{"text":"x"}]}: role is required.
        request = pb.SynthesizeAnswerRequest(
            question="What is theft?",
            history=[
                pb.ConversationTurn(role=pb.TURN_ROLE_USER, text="hi"),
                pb.ConversationTurn(role=role, text="x"),
            ],  # type: ignore[arg-type]
        )

        with pytest.raises(InvalidInputError) as info:
            convert.request_from_proto(request, default_top_k=5)

        (violation,) = info.value.violations
        assert (violation.field, violation.description) == (
            "history[1].role",
            f"must be TURN_ROLE_USER or TURN_ROLE_ASSISTANT (got {named})",
        )

    @pytest.mark.parametrize(
        "generator", [pb.GENERATOR_KIND_UNSPECIFIED, pb.GENERATOR_KIND_EXTRACTIVE]
    )
    def test_an_offered_or_default_generator_passes(self, generator: int) -> None:
        request = pb.SynthesizeAnswerRequest(question="What is theft?", generator=generator)  # type: ignore[arg-type]

        parsed = convert.request_from_proto(
            request, default_top_k=5, default_generator="extractive", offered=("extractive",)
        )

        assert parsed.question == "What is theft?"


def _never_built(model: str) -> ModelGenerator:
    raise AssertionError(f"parsing a request built a generator for {model!r}")


# The configured model, and one more the operator allowed (SYNTHESIS_OPENAI_ALLOWED_MODELS).
MODELS = ModelChoice("openai", "gpt-4o-mini", _never_built, ("gpt-4o",))


class TestModelAllowed:
    def test_a_model_not_allowed_is_named_beside_every_other_field(self) -> None:
        """Found by a security audit: "o1-pro" reached the endpoint; now it is refused with
        the models that are offered."""
        request = pb.SynthesizeAnswerRequest(question="", model=" o1-pro ")

        with pytest.raises(InvalidInputError) as info:
            convert.request_from_proto(
                request, default_top_k=5, default_generator="openai", models=MODELS
            )

        fields = {v.field: v.description for v in info.value.violations}
        assert set(fields) == {"question", "model"}
        assert fields["model"].startswith(
            "model 'o1-pro' is not offered by this server (offered: gpt-4o-mini, gpt-4o); "
        )

    @pytest.mark.parametrize("model", ["", "gpt-4o-mini", "gpt-4o", "  gpt-4o "])
    def test_the_configured_and_the_allowed_models_pass(self, model: str) -> None:
        request = pb.SynthesizeAnswerRequest(
            question="What is theft?", model=model, generator=pb.GENERATOR_KIND_OPENAI
        )

        parsed = convert.request_from_proto(
            request, default_top_k=5, default_generator="extractive", models=MODELS
        )

        assert parsed.generator == "openai"

    @pytest.mark.parametrize(
        ("model", "said"),
        [
            # Refused once, for what is wrong with it, not also for not being offered.
            ("o1-pro", "applies only to the openai generator"),
            ("x" * 201, "must be at most 200 characters"),
            ("gpt\x00mini", "not blank"),
        ],
    )
    def test_a_model_refused_for_another_reason_is_not_named_twice(
        self, model: str, said: str
    ) -> None:
        generator = pb.GENERATOR_KIND_EXTRACTIVE if model == "o1-pro" else pb.GENERATOR_KIND_OPENAI
        request = pb.SynthesizeAnswerRequest(question="What is theft?", model=model)
        request.generator = generator

        with pytest.raises(InvalidInputError) as info:
            convert.request_from_proto(
                request, default_top_k=5, default_generator="openai", models=MODELS
            )

        (violation,) = info.value.violations
        assert violation.field == "model" and said in violation.description


class TestEnumMaps:
    def test_every_requirement_has_its_proto_value(self) -> None:
        for requirement in Requirement:
            value = convert._REQUIREMENT[requirement]
            name = pb.SufficiencyRequirement.Name(value)
            assert name == f"SUFFICIENCY_REQUIREMENT_{requirement.value}"

    def test_every_refusal_code_the_pipeline_writes_has_its_proto_value(self) -> None:
        codes = {"INSUFFICIENT_EVIDENCE", "GENERATOR_DECLINED", "VALIDATION_FAILED"}
        codes |= {failure.value for failure in GenerationFailure}
        assert codes == set(convert.REFUSAL_CODES)

    def test_every_answerability_effect_has_its_proto_value(self) -> None:
        effects = {"", "vetoed", "rescued", "judge_confirmed", "judge_rescued"}
        effects |= {"judge_refused", "judge_unavailable", "judge_budget_exhausted"}
        effects |= {"question_too_long"}
        assert effects == set(convert._EFFECT)

    def test_every_statement_verdict_has_its_proto_value(self) -> None:
        from services.synthesis.answerability import StatementVerdict

        assert {v.value for v in StatementVerdict} == set(convert._STATEMENT_VERDICT)
        assert convert._STATEMENT_VERDICT["stated"] == pb.STATEMENT_VERDICT_STATED


def test_stage_timing_names_synthesiss_steps() -> None:
    """Every step synthesis puts in a response's timings is named in StageTiming's comment
    ("validation.sentence", StreamAnswer's per-sentence check, is observed, never reported)."""
    root = Path(__file__).resolve().parents[3] / "protos/grounded/type/v1/evidence.proto"
    text = root.read_text()
    start = text.index("message StageTiming {")
    comment = " ".join(
        text[start : text.index("string stage = 1;", start)].replace("//", "").split()
    )
    named = set(re.findall(r'"([\w.<>]+)"', comment.split("SynthesizeAnswer and StreamAnswer")[1]))
    reported = {s for s in pipeline.STAGES if s != "validation.sentence"} | {"total"}
    assert reported | {"retrieval.<stage>"} == named
    assert "validate" not in comment

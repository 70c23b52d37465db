"""Synthesis proto ⇄ domain conversion."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import cast

from grounded.synthesis.v1 import synthesis_service_pb2 as pb
from grounded.type.v1 import evidence_pb2

from services.common.documents import filter_value_violations
from services.common.errors import Violations, top_k_rule
from services.common.evidence import StageSkip
from services.common.language.acts import act_caveat
from services.common.language.text import NOT_BLANK, is_blank, normalise_query
from services.common.passages import INTENT_TO_PROTO, scored_to_proto, timings_to_proto
from services.common.validation_proto import report_to_proto
from services.synthesis.config import MAX_MODEL_NAME_CHARS
from services.synthesis.generation import Turn
from services.synthesis.limits import (
    MAX_HISTORY_TURNS,
    MAX_QUESTION_CHARS,
    MAX_TOP_K,
    MAX_TURN_CHARS,
)
from services.synthesis.pipeline import (
    Citation,
    SynthesisRequest,
    SynthesisResult,
    SynthesisStatus,
)
from services.synthesis.routing import (
    ModelChoice,
    log_model_not_offered,
    log_not_offered,
    model_not_offered,
    not_offered,
)
from services.synthesis.sources import RelationKind
from services.synthesis.streaming import EvidenceEvent, SentenceEvent, StreamEvent
from services.synthesis.sufficiency import Requirement, SufficiencyDecision

_STATUS = {
    SynthesisStatus.ANSWERED: pb.ANSWER_STATUS_ANSWERED,
    SynthesisStatus.REFUSED_INSUFFICIENT_EVIDENCE: pb.ANSWER_STATUS_REFUSED_INSUFFICIENT_EVIDENCE,
    SynthesisStatus.REFUSED_VALIDATION_FAILED: pb.ANSWER_STATUS_REFUSED_VALIDATION_FAILED,
    SynthesisStatus.REFUSED_GENERATION_FAILED: pb.ANSWER_STATUS_REFUSED_GENERATION_FAILED,
}
_RELATION_KINDS = {
    RelationKind.AGREEMENT: pb.SOURCE_RELATION_KIND_AGREEMENT,
    RelationKind.NUMERIC: pb.SOURCE_RELATION_KIND_NUMERIC_DISAGREEMENT,
    RelationKind.NEGATION: pb.SOURCE_RELATION_KIND_NEGATION_DISAGREEMENT,
}
_ROLES = {pb.TURN_ROLE_USER: "user", pb.TURN_ROLE_ASSISTANT: "assistant"}
GENERATOR_NAMES = {
    pb.GENERATOR_KIND_UNSPECIFIED: None,
    pb.GENERATOR_KIND_EXTRACTIVE: "extractive",
    pb.GENERATOR_KIND_OPENAI: "openai",
}
# A caller names generators and roles by the contract's enum values, so refusals do too.
_GENERATOR_KINDS = {
    name: pb.GeneratorKind.Name(kind) for kind, name in GENERATOR_NAMES.items() if name
}
_ROLE_NAMES = " or ".join(pb.TurnRole.Name(role) for role in _ROLES)


def _generator_kind(name: str) -> str:
    """A generator as the caller names it: "openai" is GENERATOR_KIND_OPENAI."""
    return _GENERATOR_KINDS.get(name, name)


def _role(number: int) -> str:
    """A TurnRole by its name, or its number when the enum has no such value."""
    return pb.TurnRole.Name(number) if number in pb.TurnRole.values() else str(number)


def request_from_proto(
    request: pb.SynthesizeAnswerRequest,
    *,
    default_top_k: int,
    default_generator: str | None = None,
    offered: Collection[str] | None = None,
    models: ModelChoice | None = None,
) -> SynthesisRequest:
    """Validate every field at once (limits are documented in the proto), then convert.

    ``model`` only means something to the OpenAI generator: naming one while the extractive
    generator would run (chosen, or the server's default) is a field violation rather than
    being silently ignored, so a caller never believes a model answered when none did.
    ``default_generator`` is the server's configured generator; None skips that check (a
    caller without a server, such as a parser test, cannot know which generator would run).
    ``offered``: the generators the server offers, so that asking for another one is named
    beside every other bad field (None skips that check). ``models``: the models a request may
    name (SYNTHESIS_OPENAI_ALLOWED_MODELS), checked the same way when the OpenAI generator
    would run (None skips that check; the generator pool refuses such a model anyway).
    """
    violations = Violations()
    violations.check(not is_blank(request.question), "question", NOT_BLANK)
    violations.check(
        len(request.question) <= MAX_QUESTION_CHARS,
        "question",
        f"must be at most {MAX_QUESTION_CHARS} characters (got {len(request.question)})",
    )
    if len(request.question) <= MAX_QUESTION_CHARS:
        searched = len(normalise_query(request.question))
        violations.check(
            searched <= MAX_QUESTION_CHARS,
            "question",
            f"must be at most {MAX_QUESTION_CHARS} characters once normalised (NFKC), as "
            f"searched (got {searched} from {len(request.question)})",
        )
    violations.check(
        0 <= request.top_k <= MAX_TOP_K,
        "top_k",
        top_k_rule(MAX_TOP_K, request.top_k),
    )
    for name in ("acts", "doc_ids"):  # retrieval's rule, checked before passing them on
        for bad in filter_value_violations(f"filters.{name}", getattr(request.filters, name)):
            violations.add(bad.field, bad.description)
    if request.generator not in GENERATOR_NAMES:
        kinds = _GENERATOR_KINDS.values() if offered is None else map(_generator_kind, offered)
        violations.add(
            "generator",
            f"unknown generator {request.generator}: not a GeneratorKind value; this server "
            f"offers {', '.join(kinds)} (unset: its default)",
        )
    violations.check(
        len(request.history) <= MAX_HISTORY_TURNS,
        "history",
        f"must hold at most {MAX_HISTORY_TURNS} turns (got {len(request.history)})",
    )
    for i, turn in enumerate(request.history[:MAX_HISTORY_TURNS]):
        violations.check(
            turn.role in _ROLES,
            f"history[{i}].role",
            f"must be {_ROLE_NAMES} (got {_role(turn.role)})",
        )
        violations.check(
            len(turn.text) <= MAX_TURN_CHARS,
            f"history[{i}].text",
            f"must be at most {MAX_TURN_CHARS} characters",
        )
    violations.check(
        len(request.model) <= MAX_MODEL_NAME_CHARS,
        "model",
        f"must be at most {MAX_MODEL_NAME_CHARS} characters",
    )
    readable = not request.model or (request.model.isprintable() and not is_blank(request.model))
    violations.check(
        readable, "model", "must be a model name: not blank, no control or invisible characters"
    )
    asked = GENERATOR_NAMES.get(request.generator)
    if offered is not None and asked is not None and asked not in offered:
        violations.add("generator", not_offered(asked, offered, named=_generator_kind))
        log_not_offered(asked)
    generator = asked or default_generator
    violations.check(
        not request.model or default_generator is None or generator == "openai",
        "model",
        f"applies only to the openai generator; the {generator} generator would run",
    )
    # The name as the pool is asked for it (the servicer strips it); one already refused for
    # its length or its characters is not named again.
    model = request.model.strip()
    named = readable and len(request.model) <= MAX_MODEL_NAME_CHARS
    if (
        models is not None
        and model
        and named
        and generator in ("openai", None)
        and not models.allows(model)
    ):
        violations.add("model", model_not_offered(model, models))
        log_model_not_offered(model)
    violations.raise_if_any()
    return SynthesisRequest(
        question=request.question.strip(),
        top_k=request.top_k or default_top_k,
        acts=tuple(request.filters.acts),
        doc_ids=tuple(request.filters.doc_ids),
        history=tuple(Turn(_ROLES[t.role], t.text) for t in request.history),
        generator=GENERATOR_NAMES[request.generator],
    )


def result_to_proto(result: SynthesisResult) -> pb.SynthesizeAnswerResponse:
    decision = result.sufficiency
    response = pb.SynthesizeAnswerResponse(
        status=_STATUS[result.status],
        answer=result.answer,
        refusal_reason=result.refusal_reason,
        refusal_code=REFUSAL_CODES.get(result.refusal_code, pb.REFUSAL_CODE_UNSPECIFIED),
        citations=[
            pb.DocumentCitations(
                doc_id=doc.doc_id,
                title=doc.title,
                section=doc.section,
                source=evidence_pb2.SourceMetadata(
                    act=doc.act,
                    act_name=doc.act_name,
                    url=doc.url,
                    chapter=doc.chapter,
                    chapter_title=doc.chapter_title,
                    page=doc.page,
                    extras=doc.extra,
                    caveat=act_caveat(doc.act),
                ),
                citations=[citation_to_proto(c) for c in doc.citations],
            )
            for doc in result.citations
        ],
        sufficiency=sufficiency_to_proto(decision),
        timings=_timings(result.timings_ms, result.skipped_stages),
        synthesis_mode=result.synthesis_mode,
        source_doc_count=result.source_doc_count,
        evidence=[scored_to_proto(s) for s in result.evidence],
        compact_answer=result.compact_answer,
        retrieval_query=result.retrieval_query,
        history_turns_used=result.history_turns_used,
        index_version=result.index_version,
        input_kind=input_kind(result.statement),
        source_relations=[
            pb.SourceRelation(
                first_semantic_id=r.first_id,
                second_semantic_id=r.second_id,
                kind=_RELATION_KINDS[r.kind],
                description=r.description,
            )
            for r in result.source_relations
        ],
    )
    if result.validation is not None:
        response.validation.CopyFrom(report_to_proto(result.validation))
    if result.usage is not None:
        usage = result.usage
        response.usage.CopyFrom(
            pb.TokenUsage(
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                # Some OpenAI-compatible servers omit or zero the total; it is the sum then.
                total_tokens=usage.total_tokens or usage.prompt_tokens + usage.completion_tokens,
                model=result.model,
            )
        )
    return response


def _timings(
    ran: Mapping[str, float], skipped: Mapping[str, StageSkip]
) -> list[evidence_pb2.StageTiming]:
    """The stages that ran, in order, then the requested ones skipped (ran false, with why):
    retrieval's own skips pass through as "retrieval.<stage>"."""
    return timings_to_proto(
        [(stage, True, ms) for stage, ms in ran.items()]
        + [(stage, False, 0.0) for stage in skipped if stage not in ran],
        skipped,
    )


def citation_to_proto(c: Citation) -> pb.Citation:
    return pb.Citation(
        semantic_id=c.semantic_id,
        sentence=c.text,
        snippet=c.snippet,
        sentence_index=c.sentence_index,
        score=c.score,
        char_start=c.char_start,
        char_end=c.char_end,
        answer_sentences=c.answer_sentences,
        locator=c.locator,
        page=c.page,
    )


# The pipeline's refusal codes ("INSUFFICIENT_EVIDENCE", a GenerationFailure value, ...) → the
# proto enum; a test checks every code the pipeline can produce maps.
REFUSAL_CODES: dict[str, pb.RefusalCode] = {
    name.removeprefix("REFUSAL_CODE_"): cast(pb.RefusalCode, value)
    for name, value in pb.RefusalCode.items()
    if value != pb.REFUSAL_CODE_UNSPECIFIED
}
# Domain requirement → its proto enum value (same names, prefixed); a test checks every one maps.
_REQUIREMENT: dict[Requirement, pb.SufficiencyRequirement] = {
    r: cast(
        pb.SufficiencyRequirement,
        pb.SufficiencyRequirement.Value(f"SUFFICIENCY_REQUIREMENT_{r.value}"),
    )
    for r in Requirement
}
# The answerability effects ("" for none) → the proto enum.
_EFFECT: dict[str, pb.AnswerabilityEffect] = {
    name.removeprefix("ANSWERABILITY_EFFECT_").lower(): cast(pb.AnswerabilityEffect, value)
    for name, value in pb.AnswerabilityEffect.items()
    if value != pb.ANSWERABILITY_EFFECT_UNSPECIFIED
} | {"": pb.ANSWERABILITY_EFFECT_UNSPECIFIED}


_STATEMENT_VERDICT: dict[str, pb.StatementVerdict] = {
    name.removeprefix("STATEMENT_VERDICT_").lower(): cast(pb.StatementVerdict, value)
    for name, value in pb.StatementVerdict.items()
    if value != pb.STATEMENT_VERDICT_UNSPECIFIED
} | {"": pb.STATEMENT_VERDICT_UNSPECIFIED}


def sufficiency_to_proto(decision: SufficiencyDecision) -> pb.SufficiencyReport:
    return pb.SufficiencyReport(
        sufficient=decision.sufficient,
        intent=INTENT_TO_PROTO[decision.intent],
        requirements=[_REQUIREMENT[r] for r in decision.requirements],
        failure=decision.reason,
        supporting_ids=decision.supporting_ids,
        failed_requirement=(
            _REQUIREMENT[decision.failed]
            if decision.failed is not None
            else pb.SUFFICIENCY_REQUIREMENT_UNSPECIFIED
        ),
        compared_terms=decision.compared,
        answerability_score=decision.answerability,
        answerability_model=decision.answerability_model,
        answerability_effect=_EFFECT[decision.answerability_effect],
        answerability_by_id=dict(decision.answerability_by_id),
        answerability_judge_model=decision.judge_model,
        answerability_judge_score=decision.judge_score,
        statement_verdict=_STATEMENT_VERDICT[decision.statement_verdict],
        parts=[
            pb.QuestionPart(question=part, score=score, answered=answered)
            for part, score, answered in decision.answerability_parts
        ],
    )


def input_kind(statement: bool) -> pb.InputKind:
    """How the input was read, as the response's input_kind."""
    return pb.INPUT_KIND_STATEMENT if statement else pb.INPUT_KIND_QUESTION


def event_to_proto(event: StreamEvent) -> pb.StreamAnswerResponse:
    """One StreamAnswer event as its proto."""
    if isinstance(event, EvidenceEvent):
        return pb.StreamAnswerResponse(
            evidence=pb.EvidenceRetrieved(
                evidence=[scored_to_proto(s) for s in event.evidence],
                doc_ids=list(dict.fromkeys(s.chunk.doc_id for s in event.evidence)),
                timings=_timings(event.timings_ms, event.skipped_stages),
                sufficiency=sufficiency_to_proto(event.sufficiency),
                input_kind=input_kind(event.statement),
            )
        )
    if isinstance(event, SentenceEvent):
        return pb.StreamAnswerResponse(
            sentence=pb.ValidatedSentence(
                index=event.index,
                text=event.text,
                citations=[citation_to_proto(c) for c in event.citations],
                doc_ids=[c.doc_id for c in event.citations],
            )
        )
    return pb.StreamAnswerResponse(
        finished=pb.AnswerFinished(
            response=result_to_proto(event.result),
            retract=event.retract,
            sentences_sent=event.sentences_sent,
        )
    )

"""Synthesis server wiring: downstream channels, the generator pool, pipeline, health, signals."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from grounded.synthesis.v1 import synthesis_service_pb2_grpc as pb_grpc

from services.common.answerability_model import CONTRADICTION, ENTAILMENT, load_scorer
from services.common.channels import ChannelPolicy, open_channel
from services.common.cross_encoder import require_calibrated, still_runs
from services.common.errors import ModelUnavailableError
from services.common.judge_client import build_judge, judge_band
from services.common.metrics import set_build_info
from services.common.server import GrpcService, ServiceApp, serve_main
from services.synthesis.answerability import (
    DEFAULT_JUDGE_BAND,
    AnswerabilityCheck,
    StatementCheck,
)
from services.synthesis.answerability_onnx import options_from_manifest
from services.synthesis.clients import (
    GET_DOCUMENT_METHOD,
    LIST_DOCUMENTS_METHOD,
    RETRIEVAL_SERVICE,
    RETRIEVE_METHOD,
    VALIDATE_METHOD,
    VALIDATOR_SERVICE,
    GrpcRetriever,
    GrpcValidator,
)
from services.synthesis.config import SERVICE_NAME, SynthesisConfig
from services.synthesis.extractive import ExtractiveGenerator, ExtractiveOptions
from services.synthesis.limits import MAX_QUESTION_CHARS, MAX_TOP_K
from services.synthesis.openai_generator import OpenAIGenerator, OpenAISettings
from services.synthesis.pipeline import PipelineSettings, SynthesisPipeline
from services.synthesis.routing import MAX_MODEL_VARIANTS, ModelChoice, offered_generators
from services.synthesis.servicer import SynthesisServicer

logger = logging.getLogger(__name__)


def _openai_settings(config: SynthesisConfig, model: str = "") -> OpenAISettings:
    o = config.openai
    return OpenAISettings(
        base_url=o.base_url,
        model=model or o.model,
        api_key=o.api_key.reveal() or "none",
        timeout_s=o.timeout_s,
        max_tokens=o.max_tokens,
        seed=o.seed,
        stream=o.stream,
        stream_usage=o.stream_usage,
        max_history_turns=config.history_turns,
    )


def _offered_models(choice: ModelChoice | None) -> dict[str, object]:
    """The ready line's ``models``: what requests may name (SYNTHESIS_OPENAI_ALLOWED_MODELS;
    "*" for any), absent when the OpenAI generator is not offered."""
    if choice is None:
        return {}
    offered = choice.offered
    return {"models": ["*"] if offered is None else list(offered)}


def create_app(config: SynthesisConfig) -> ServiceApp:
    service = GrpcService(label="synthesis", service_names=[SERVICE_NAME], settings=config.server)
    tls = config.client_tls if config.client_tls.ca_file else None

    def policy(service: str, *methods: str) -> ChannelPolicy:
        return ChannelPolicy(
            load_balancing=config.load_balancing,
            retry_methods=methods,
            max_attempts=config.retry_attempts,
            max_reconnect_backoff_s=config.reconnect_backoff_max_s,
            health_service=service,
        )

    retrieval_channel = open_channel(
        config.retrieval_addr,
        tls=tls,
        max_message_bytes=config.server.max_message_bytes,
        policy=policy(
            RETRIEVAL_SERVICE, RETRIEVE_METHOD, GET_DOCUMENT_METHOD, LIST_DOCUMENTS_METHOD
        ),
    )
    validator_channel = open_channel(
        config.validator_addr,
        tls=tls,
        max_message_bytes=config.server.max_message_bytes,
        policy=policy(VALIDATOR_SERVICE, VALIDATE_METHOD),
    )
    settings = PipelineSettings(
        retrieval_timeout_s=config.retrieval_timeout_s,
        validation_timeout_s=config.validator_timeout_s,
        generation_timeout_s=config.openai.timeout_s,
        max_top_k=MAX_TOP_K,
        max_question_chars=MAX_QUESTION_CHARS,
        history_turns=config.history_turns,
        second_hop=config.second_hop,
        promote_named=config.promote_named,
        candidate_pool=config.candidate_pool,
        part_retrieval=config.part_retrieval,
        operative_text=config.operative_text,
        whole_lists=config.whole_lists,
    )
    # A call first waits for a reconnecting dependency up to a little more than the capped
    # reconnect backoff (one more dial), so the first call after a restart gets through.
    connect_wait_s = config.reconnect_backoff_max_s * 1.5
    retriever = GrpcRetriever(
        retrieval_channel, connect_wait_s=connect_wait_s, target=config.retrieval_addr
    )
    validator = GrpcValidator(
        validator_channel, connect_wait_s=connect_wait_s, target=config.validator_addr
    )
    if config.server.grace_s < config.slowest_answer_s:
        logger.warning(
            "SYNTHESIS_GRACE_S=%g is shorter than the slowest answer these limits allow "
            "(%g s: retrieval, the judge or a statement check, the LLM if offered, validation): "
            "answers in flight at shutdown may be cut off",
            config.server.grace_s,
            config.slowest_answer_s,
        )
    # Loaded at warm-up (one model and one judge per process).
    judge = build_judge(config.judge)
    answerability = AnswerabilityCheck(
        judge=judge, band=judge_band(config.judge, DEFAULT_JUDGE_BAND)
    )
    if judge is not None:
        if config.answerability.mode in ("off", "shadow"):
            logger.warning(
                "a judge is configured but SYNTHESIS_ANSWERABILITY=%s: it is never asked "
                "(it settles only what the answerability model leaves uncertain)",
                config.answerability.mode,
            )
        else:
            logger.info(
                "judge tier on", extra={"judge": repr(judge), "band": repr(answerability.band)}
            )

    # Which generators are offered, which is the default, and one per caller-chosen model:
    # routing.py. Every request goes through this one pipeline.
    pool, default_openai = offered_generators(
        config,
        extractive=ExtractiveGenerator(
            ExtractiveOptions(
                weight_answerability=config.answerability.extractive_weight,
                complement_answering_at=config.answerability.complement_answering_at,
                bridge_titles=config.extractive_bridge_titles,
                operative_first=config.operative_text,
                whole_lists=config.whole_lists,
                keep_clause_marks=config.extractive_keep_clause_marks,
                complement_by_title=config.extractive_complement_by_title,
                part_answers_first=config.extractive_part_answers,
                answering_floor=config.extractive_answering_floor,
            )
        ),
        openai=lambda model: OpenAIGenerator(_openai_settings(config, model)),
        capacity=MAX_MODEL_VARIANTS,
    )
    pipeline = SynthesisPipeline(
        retriever, validator, pool, settings, answerability=answerability, catalogue=retriever
    )

    async def on_model_failure() -> None:
        # As the validator's: a model that still runs its self-check was broken by that
        # request's input alone; that call fails, the pod keeps serving.
        problem = await still_runs(answerability.encoders())
        if problem is None:
            logger.warning("models pass their self-check after that failure: serving")
            return
        logger.error("a model fails its self-check too, not serving: %s", problem)
        await service.mark_not_serving()

    servicer = SynthesisServicer(
        pipeline.lease,
        documents=retriever,
        documents_timeout_s=config.retrieval_timeout_s,
        default_top_k=config.default_top_k,
        default_generator=config.generator,
        on_model_failure=on_model_failure,
        offered_generators=pipeline.generator_names,
        models=pool.model_choice,
    )

    async def load_answerability() -> None:
        a = config.answerability
        if a.mode == "off":
            return
        statements = StatementCheck(a.statements)
        try:
            scorer = await asyncio.to_thread(
                load_scorer, a.model_dir, threads=a.threads, cache_size=a.cache_size
            )
            options = options_from_manifest(
                scorer,
                a.mode,
                a.veto_below,
                a.rescue_at,
                statements=statements,
                statement_veto_below=a.statement_veto_below,
                statement_rescue_at=a.statement_rescue_at,
            )
        except ModelUnavailableError as exc:
            raise _unavailable(
                exc,
                "answerability model",
                ("SYNTHESIS_ANSWERABILITY_MODEL_DIR", a.model_dir),
                "set SYNTHESIS_ANSWERABILITY=off",
            ) from exc
        try:
            claims = (
                await asyncio.to_thread(
                    load_scorer,
                    a.statement_model_dir,
                    threads=a.threads,
                    label=ENTAILMENT,
                    # 1.0 turns it off: only entailment counts.
                    counter_label=CONTRADICTION if a.statement_contradiction_at < 1.0 else None,
                    counter_at=a.statement_contradiction_at,
                    cache_size=a.cache_size,
                )
                if statements is StatementCheck.ENTAILMENT
                else None
            )
            if claims is not None and a.mode != "shadow":
                require_calibrated(claims.encoder.manifest)
        except ModelUnavailableError as exc:
            raise _unavailable(
                exc,
                "statement model",
                ("SYNTHESIS_STATEMENT_MODEL_DIR", a.statement_model_dir),
                "set SYNTHESIS_ANSWERABILITY_STATEMENTS=keywords (or SYNTHESIS_ANSWERABILITY=off)",
            ) from exc
        answerability.load(scorer, options, claims)
        logger.info(
            "answerability model loaded",
            extra={
                "model": scorer.name,
                "mode": options.mode.value,
                "veto_below": options.veto_below,
                "rescue_at": options.rescue_at,
                "statements": statements.value,
                **(
                    {
                        "statement_model": claims.name,
                        "statement_veto_below": options.statement_veto_below,
                        "statement_rescue_at": options.statement_rescue_at,
                    }
                    if claims is not None
                    else {}
                ),
            },
        )

    async def warm_up() -> None:
        await load_answerability()
        if default_openai is not None:
            await default_openai.warm_up()
        loaded = (answerability.scorer, answerability.statement_scorer)
        set_build_info("synthesis", models=[m.name for m in loaded if m is not None])
        logger.info(
            "synthesis ready",
            extra={
                "generator": config.generator,
                "generators": list(pipeline.generator_names),
                **_offered_models(pool.model_choice),
                "retrieval": config.retrieval_addr,
                "validator": config.validator_addr,
            },
        )

    async def on_stop() -> None:
        await pool.aclose()
        if judge is not None:
            await judge.aclose()
        if default_openai is not None:
            await default_openai.aclose()
        await retrieval_channel.close()
        await validator_channel.close()

    return ServiceApp(
        service,
        lambda server: pb_grpc.add_SynthesisServiceServicer_to_server(servicer, server),
        warm_up,
        on_stop,
    )


def _unavailable(
    exc: ModelUnavailableError, model: str, setting: tuple[str, Path], instead: str
) -> ModelUnavailableError:
    """Log that ``model`` could not load (one ERROR line saying how to run without it on
    purpose) and return the error naming the setting that chose it."""
    named = exc.naming(*setting)
    logger.error(
        "%s unavailable, not serving: %s (%s to run without it on purpose)",
        model,
        named.message,
        instead,
    )
    return named


def main() -> None:
    serve_main("synthesis", SynthesisConfig.from_env, create_app)

"""Validator server wiring: config, servicer, health, reflection, signals."""

from __future__ import annotations

import asyncio
import logging

from grounded.validator.v1 import validator_service_pb2_grpc as pb_grpc

from services.common.cross_encoder import encoders_of, still_runs
from services.common.errors import ModelUnavailableError
from services.common.judge_client import build_judge, judge_band
from services.common.metrics import set_build_info
from services.common.server import GrpcService, ServiceApp, serve_main
from services.validator.cascade import DEFAULT_BAND
from services.validator.config import SERVICE_NAME, ValidatorConfig
from services.validator.nli_onnx import tier_from_config
from services.validator.servicer import ValidatorServicer

logger = logging.getLogger(__name__)


def create_app(config: ValidatorConfig) -> ServiceApp:
    service = GrpcService(label="validator", service_names=[SERVICE_NAME], settings=config.server)

    judge = build_judge(config.judge)

    async def on_model_failure() -> None:
        # A model that still runs its self-check was broken by that request's input alone:
        # that call fails (MODEL_UNAVAILABLE), the pod keeps serving, so one request cannot
        # take replica after replica out of rotation as a client retries it.
        problem = await still_runs(encoders_of(servicer.tier and servicer.tier.model))
        if problem is None:
            logger.warning("entailment model passes its self-check after that failure: serving")
            return
        logger.error("entailment model fails its self-check too, not serving: %s", problem)
        await service.mark_not_serving()

    servicer = ValidatorServicer(
        inline_max_bytes=config.inline_max_bytes,
        on_model_failure=on_model_failure,
        judge=judge,
        band=judge_band(config.judge, DEFAULT_BAND),
        review=config.judge_review,
    )
    if judge is not None:
        logger.info(
            "judge tier on",
            extra={
                "judge": repr(judge),
                "band": repr(servicer.band),
                "review": sorted(r.value for r in servicer.review),
            },
        )

    async def warm_up() -> None:
        if not config.entailment:
            logger.warning(
                "entailment tier switched off by VALIDATOR_ENTAILMENT; lexical tiers only"
            )
            set_build_info("validator")
            return
        try:
            servicer.tier = await asyncio.to_thread(tier_from_config, config)
        except ModelUnavailableError as exc:
            named = exc.naming("VALIDATOR_ENTAILMENT_MODEL_DIR", config.model_dir)
            logger.error(
                "entailment model unavailable, not serving: %s (set VALIDATOR_ENTAILMENT=off to "
                "run without it on purpose)",
                named.message,
            )
            raise named from exc
        set_build_info("validator", models=[servicer.tier.model.name])

    async def on_stop() -> None:
        if judge is not None:
            await judge.aclose()

    return ServiceApp(
        service,
        lambda server: pb_grpc.add_ValidatorServiceServicer_to_server(servicer, server),
        warm_up,
        on_stop,
    )


def main() -> None:
    serve_main("validator", ValidatorConfig.from_env, create_app)

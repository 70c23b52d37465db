"""Validator server wiring: config, servicer, health, reflection, signals."""

from __future__ import annotations

import asyncio

from grounded.validator.v1 import validator_service_pb2_grpc as pb_grpc

from services.common.logs import configure_logging
from services.common.server import GrpcService, ServiceApp, run_until_signalled
from services.validator.config import SERVICE_NAME, ValidatorConfig
from services.validator.servicer import ValidatorServicer


def create_app(config: ValidatorConfig) -> ServiceApp:
    service = GrpcService(label="validator", service_names=[SERVICE_NAME], settings=config.server)
    servicer = ValidatorServicer(inline_max_bytes=config.inline_max_bytes)

    async def warm_up() -> None:
        return None  # nothing to load: the validator is pure computation

    return ServiceApp(
        service,
        lambda server: pb_grpc.add_ValidatorServiceServicer_to_server(servicer, server),
        warm_up,
    )


def main() -> None:
    config = ValidatorConfig.from_env()
    configure_logging("validator", config.server.log_level)

    # The aio server and channels bind to the running loop, so they are built inside it.
    async def serve() -> None:
        await run_until_signalled(create_app(config))

    asyncio.run(serve())

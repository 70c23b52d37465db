"""gRPC server bootstrap shared by all services: health, reflection, TLS, signals, graceful drain."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError
from grounded.type.v1 import error_reason_pb2
from grpc import aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

from services.common.config import (
    InvalidSettingError,
    ServerSettings,
    SettingError,
    TlsSettings,
    bind_error,
    exit_on_setting_error,
    host_port,
)
from services.common.errors import GroundedError
from services.common.interceptors import ServiceInterceptor
from services.common.logs import configure_logging
from services.common.metrics import SERVING_STATE, serve_metrics
from services.common.tracing import configure_tracing, server_interceptors

logger = logging.getLogger(__name__)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING

# Reflection describes what the process's descriptor pool holds, and a file gets there when its
# stub is imported. grounded.type.v1.ErrorReason (the ErrorInfo reasons every error carries) is
# in no service's request or response, so no servicer imports it: named here, every server
# registers it and `grpcurl describe grounded.type.v1.ErrorReason` answers.
ERROR_REASON = error_reason_pb2.DESCRIPTOR.enum_types_by_name["ErrorReason"].full_name


def server_credentials(tls: TlsSettings) -> grpc.ServerCredentials:
    """Server TLS credentials; with a CA file and require_client_auth, mutual TLS."""
    key = Path(tls.key_file).read_bytes()
    cert = Path(tls.cert_file).read_bytes()
    ca = Path(tls.ca_file).read_bytes() if tls.ca_file else None
    return grpc.ssl_server_credentials(
        [(key, cert)],
        root_certificates=ca,
        require_client_auth=tls.require_client_auth and ca is not None,
    )


class GrpcService:
    """One running gRPC server: created NOT_SERVING, flipped to SERVING after warm-up."""

    def __init__(
        self, *, label: str, service_names: Sequence[str], settings: ServerSettings
    ) -> None:
        self.label = label
        self.service_names = tuple(service_names)
        self.settings = settings
        options = [
            ("grpc.max_receive_message_length", settings.max_message_bytes),
            ("grpc.max_send_message_length", settings.max_message_bytes),
            ("grpc.so_reuseport", 0),
        ]
        if settings.max_connection_age_s > 0:
            options += [
                ("grpc.max_connection_age_ms", int(settings.max_connection_age_s * 1000)),
                (
                    "grpc.max_connection_age_grace_ms",
                    int(settings.max_connection_age_grace_s * 1000),
                ),
            ]
        # Set once warm-up has finished (mark_serving); until then the service's own methods
        # answer UNAVAILABLE (ServiceInterceptor). It stays set through a later NOT_SERVING
        # (a model that failed, the drain), which the servicers answer for themselves.
        self.warm = False
        # The concurrency limit is the interceptor's, not aio.server(maximum_concurrent_rpcs=):
        # gRPC's counts health checks too, so a server busy at its limit would fail the kubelet's
        # liveness probe and be restarted with every call in flight lost.
        gate = ServiceInterceptor(
            label,
            ready=lambda: self.warm,
            gated=self.service_names,
            max_concurrent=settings.max_concurrent_rpcs,
            setting=f"{label.upper()}_MAX_CONCURRENT_RPCS",
        )
        # The tracing interceptor runs first, so its span is current in the handler (and its logs).
        self.server = aio.server(interceptors=[*server_interceptors(), gate], options=options)
        self.health = _HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflector = _CommentedReflectionServicer(
            (
                *self.service_names,
                health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                REFLECTION_V1,
                reflection.SERVICE_NAME,
            ),
            contract_comments(),
        )
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(reflector, self.server)
        self.server.add_generic_rpc_handlers((reflection_v1_handler(reflector),))
        self.port = 0

    async def start(self, register: Callable[[aio.Server], None]) -> int:
        """Register servicers, bind and start; every service reports NOT_SERVING until ready."""
        register(self.server)
        address = host_port(self.settings.host, self.settings.port)
        # Before the try: an InvalidSettingError is a RuntimeError too.
        self.settings.tls.check_server_files(f"{self.label.upper()}_")
        try:
            if self.settings.tls.enabled:
                credentials = server_credentials(self.settings.tls)
                self.port = self.server.add_secure_port(address, credentials)
            else:
                self.port = self.server.add_insecure_port(address)
        except RuntimeError as error:  # grpc-core's "Failed to bind to address ..."
            raise self._bind_error(address) from error
        await self.mark_not_serving()
        await self.server.start()
        logger.info(
            "listening",
            extra={
                "address": host_port(self.settings.host, self.port),
                "tls": self.settings.tls.enabled,
            },
        )
        return self.port

    def _bind_error(self, address: str) -> InvalidSettingError:
        """Why ``address`` cannot be listened on, naming the settings to change (gRPC says only
        "Failed to bind"): a host that does not resolve, one not of this machine, a port in use.
        With TLS on, gRPC says the same of TLS files it refuses (``check_server_files`` finds
        those it can): when the address can be had, the TLS settings are named instead."""
        p = self.label.upper()
        host, port = self.settings.host, self.settings.port
        named = f"{p}_HOST={host!r} / {p}_PORT={port}: cannot listen on {address}"
        error = bind_error(host, port)
        if isinstance(error, socket.gaierror | UnicodeError):
            return InvalidSettingError(f"{named}: {p}_HOST does not resolve ({error})")
        if error is not None:
            return InvalidSettingError(f"{named}: {error.strerror}")
        tls = self.settings.tls
        if tls.enabled:
            files = [f"{p}_TLS_CERT_FILE", f"{p}_TLS_KEY_FILE"]
            files += [f"{p}_TLS_CA_FILE"] if tls.ca_file else []
            return InvalidSettingError(
                f"{' / '.join(files)}: cannot listen on {address} with TLS, though the address "
                "is free: gRPC most likely refused these files (its own log lines above say why)"
            )
        return InvalidSettingError(named)

    async def mark_not_serving(self) -> None:
        """Take the server out of rotation (start-up, or a shipped model that stopped working)."""
        for name in ("", *self.service_names):
            await self.health.set(name, NOT_SERVING)
        self._publish_health()

    async def mark_serving(self) -> None:
        self.warm = True
        for name in ("", *self.service_names):
            await self.health.set(name, SERVING)
        self._publish_health()
        logger.info("serving", extra={"services": list(self.service_names)})

    async def enter_lame_duck(self) -> None:
        """Report NOT_SERVING for good (the drain); calls are still answered until ``stop``."""
        await self.health.enter_graceful_shutdown()
        self._publish_health()

    def _publish_health(self) -> None:
        """``grounded_serving`` follows what health reports for the whole server (name "")."""
        SERVING_STATE.labels(self.label).set(1 if self.health.serving else 0)

    async def stop(self, grace: float | None = None) -> None:
        """Flip health to NOT_SERVING, refuse new calls, let in-flight calls finish within grace."""
        await self.enter_lame_duck()
        await self.server.stop(self.settings.grace_s if grace is None else grace)


class _HealthServicer(health.aio.HealthServicer):  # type: ignore[misc]  # untyped library
    """grpc's asyncio health servicer plus ``List`` (grpc.health.v1 declares it and reflection
    advertises it, but the library leaves it unimplemented): every service name this server
    reports, with its status, as ``Check`` would answer for each."""

    @property
    def serving(self) -> bool:
        """Whether the server as a whole (service name "") reports SERVING."""
        return bool(self._server_status.get("") == SERVING)

    async def List(
        self, request: health_pb2.HealthListRequest, context: aio.ServicerContext[Any, Any]
    ) -> health_pb2.HealthListResponse:
        return health_pb2.HealthListResponse(
            statuses={
                name: health_pb2.HealthCheckResponse(status=status)
                for name, status in sorted(self._server_status.items())
            }
        )


# The contracts with their comments, written beside the stubs by `make protos` (and the
# Dockerfile's stub stage) in the same protoc run: --include_source_info --descriptor_set_out.
DESCRIPTOR_SET = resources.files("grounded") / "descriptor_set.binpb"


def read_comments(source: Traversable) -> dict[str, descriptor_pb2.SourceCodeInfo]:
    """Each file's comments (its ``source_code_info``) in the descriptor set ``source``, by file
    name. Missing or unreadable, it is no reason not to serve: the result is empty, so
    reflection sends the stock descriptors (without comments), and a warning says so."""
    try:
        files = descriptor_pb2.FileDescriptorSet.FromString(source.read_bytes()).file
    except (OSError, DecodeError) as error:
        logger.warning(
            "reflection serves the contracts without their comments: cannot read %s (%s); "
            "make protos writes it",
            source,
            error,
        )
        return {}
    return {file.name: file.source_code_info for file in files}


@functools.cache
def contract_comments() -> Mapping[str, descriptor_pb2.SourceCodeInfo]:
    """The shipped descriptor set's comments, read once per process (every server serves the
    same contracts)."""
    return read_comments(DESCRIPTOR_SET)


# Server reflection's stable name. grpcio-reflection ships only v1alpha; tools that ask v1 first
# and do not fall back (newer GUIs) found nothing. The two protocols are the same messages, field
# for field, under another package, so one servicer answers both (``reflection_v1_handler``).
REFLECTION_V1 = "grpc.reflection.v1.ServerReflection"
_REFLECTION_V1_FILE = "grpc/reflection/v1/reflection.proto"


def _register_reflection_v1() -> None:
    """Put grpc/reflection/v1/reflection.proto in the default descriptor pool (idempotent):
    v1alpha's file under v1's name, package and options, so reflection can describe v1 too."""
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(_REFLECTION_V1_FILE)
        return
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    alpha, stable = f".{proto.package}.", ".grpc.reflection.v1."
    proto.name, proto.package = _REFLECTION_V1_FILE, "grpc.reflection.v1"
    proto.options.Clear()
    proto.options.java_package = "io.grpc.reflection.v1"
    proto.options.java_outer_classname = "ServerReflectionProto"
    proto.options.java_multiple_files = True
    proto.options.go_package = "google.golang.org/grpc/reflection/grpc_reflection_v1"
    for message in proto.message_type:
        for field in message.field:
            if field.type_name.startswith(alpha):
                field.type_name = stable + field.type_name[len(alpha) :]
    for method in proto.service[0].method:
        method.input_type = stable + method.input_type[len(alpha) :]
        method.output_type = stable + method.output_type[len(alpha) :]
    pool.Add(proto)


def reflection_v1_handler(servicer: Any) -> grpc.GenericRpcHandler:
    """``grpc.reflection.v1.ServerReflection/ServerReflectionInfo``, answered by ``servicer``
    (the v1alpha one): the bytes on the wire are the same for both versions."""
    _register_reflection_v1()
    return grpc.method_handlers_generic_handler(
        REFLECTION_V1,
        {
            "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
                servicer.ServerReflectionInfo,
                request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
                response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
            )
        },
    )


class _CommentedReflectionServicer(reflection.aio.ReflectionServicer):  # type: ignore[misc]
    """grpc's asyncio reflection servicer, sending our contracts with their comments and every
    field's JSON name.

    The stock servicer rebuilds every file it sends from the runtime's descriptor pool
    (``CopyToProto``), and the stubs embed descriptors without source info, so `grpcurl
    describe` showed fields without the comments that state their limits, units and defaults.
    Each file found in ``comments`` gets its comments back (the comments' paths index the
    file's elements in declaration order, which CopyToProto keeps). ``CopyToProto`` also leaves
    out each field's ``json_name``, which protoc writes into every descriptor set: without it
    grpcurl printed snake_case JSON (``doc_id``) from reflection but lowerCamelCase (``docId``)
    from the .proto files, as Go's protojson and protobuf-es do. Every file sent, ours or not
    (health, reflection, google.rpc's error details), gets the JSON names the pool's own
    descriptors give (``_fill_json_names``), so reflection and the .proto files agree on the
    canonical proto3 JSON names. Nothing else changes.
    """

    def __init__(
        self, service_names: Sequence[str], comments: Mapping[str, descriptor_pb2.SourceCodeInfo]
    ) -> None:
        super().__init__(service_names)
        self._comments = comments

    async def ServerReflectionInfo(
        self, request_iterator: AsyncIterator[Any], context: aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[Any]:
        async for response in super().ServerReflectionInfo(request_iterator, context):
            if response.HasField("file_descriptor_response"):
                protos = response.file_descriptor_response.file_descriptor_proto
                protos[:] = [self._completed(proto) for proto in protos]
            yield response

    def _completed(self, serialized: bytes) -> bytes:
        proto = descriptor_pb2.FileDescriptorProto.FromString(serialized)
        _fill_json_names(proto, self._pool)
        comments = self._comments.get(proto.name)
        if comments is not None:
            proto.source_code_info.CopyFrom(comments)
        return proto.SerializeToString()


def _fill_json_names(file: descriptor_pb2.FileDescriptorProto, pool: Any) -> None:
    """Set each field's ``json_name`` in ``file`` (nested messages' too) where it is unset, to
    what ``pool``'s descriptor of that field says (protobuf's lowerCamelCase of the name, or a
    ``json_name`` option): what protoc writes into a descriptor set."""

    def fill(messages: Sequence[descriptor_pb2.DescriptorProto], scope: str) -> None:
        for message in messages:
            full_name = f"{scope}.{message.name}" if scope else message.name
            fields = pool.FindMessageTypeByName(full_name).fields_by_name
            for field in message.field:
                if not field.HasField("json_name"):
                    field.json_name = fields[field.name].json_name
            fill(message.nested_type, full_name)

    fill(file.message_type, file.package)


@dataclass
class ServiceApp:
    """A service ready to run: its server, how to register its servicers, how to warm it up."""

    service: GrpcService
    register: Callable[[aio.Server], None]
    warm_up: Callable[[], Awaitable[None]]
    on_stop: Callable[[], Awaitable[None]] | None = None

    @property
    def port(self) -> int:
        return self.service.port

    async def start(self) -> int:
        """Bind, start NOT_SERVING, warm up, then report SERVING (used by tests and run())."""
        port = await self.service.start(self.register)
        await self.warm_up()
        await self.service.mark_serving()
        return port

    async def stop(self, grace: float | None = None) -> None:
        await self.service.stop(grace)
        if self.on_stop is not None:
            await self.on_stop()


async def run_until_signalled(app: ServiceApp) -> bool:
    """Start, warm up, serve until SIGTERM/SIGINT, then drain gracefully. False when the signal
    came during warm-up: the server is stopped at once (it answered nothing but NOT_READY, so
    there is nothing to drain), and the caller should exit without waiting for the warm-up's
    worker thread, which cannot be cancelled (``serve_main``)."""
    service = app.service
    loop = asyncio.get_running_loop()
    stop_requested = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop_requested.set)
    serve_metrics(service.settings.metrics_port, service.settings.host)
    await service.start(app.register)
    warm: asyncio.Future[None] = asyncio.ensure_future(app.warm_up())
    waiter: asyncio.Future[Any] = asyncio.ensure_future(stop_requested.wait())
    done, _ = await asyncio.wait({warm, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if warm in done:
        if warm.exception() is not None:
            # A failed warm-up stops the process with its error, not serve forever; the server
            # (bound, NOT_SERVING) and the app's clients are closed first.
            waiter.cancel()
            try:
                await app.stop(0)
            finally:
                warm.result()
        await service.mark_serving()
        await waiter
    else:
        warm.cancel()
        await app.stop(0)
        logger.info("stopped during warm-up")
        return False
    # Lame duck: report NOT_SERVING but keep answering for drain_delay_s, so load balancers stop
    # routing here and calls already queued in the transport are picked up (grpc-core cancels
    # calls not yet handed to a handler when stop() begins); then refuse new calls and give
    # in-flight ones grace_s to finish.
    await service.enter_lame_duck()
    logger.info(
        "draining",
        extra={
            "drain_delay_s": service.settings.drain_delay_s,
            "grace_s": service.settings.grace_s,
        },
    )
    await asyncio.sleep(service.settings.drain_delay_s)
    await app.stop()
    logger.info("stopped")
    return True


class _Configured(Protocol):
    @property
    def server(self) -> ServerSettings: ...


C = TypeVar("C", bound=_Configured)


def serve_main(
    label: str, read_config: Callable[[], C], create_app: Callable[[C], ServiceApp]
) -> None:
    """A service's entry point: read its settings, log JSON lines, trace (when configured), serve
    until SIGTERM. A bad setting, read from the environment or found wrong against another
    while the app is built, ends start-up with one line that names it (exit status 2)."""
    try:
        config = read_config()
        configure_logging(label, config.server.log_level)
        configure_tracing(label)  # off unless OTEL_TRACES_EXPORTER is set

        # The aio server and channels bind to the running loop, so they are built inside it.
        async def serve() -> None:
            if not await run_until_signalled(create_app(config)):
                # Stopped during warm-up: the thread loading a model or the index (read-only)
                # cannot be interrupted, and both asyncio.run and the interpreter would wait
                # for it (retrieval took 8-9 s to exit, up to its whole warm-up); end here.
                logging.shutdown()
                os._exit(0)

        asyncio.run(serve())
    except SettingError as error:
        exit_on_setting_error(label, error)
    except Exception as exc:
        # A model that cannot load, or a crash: one JSON line (the traceback a field of it), not
        # raw traceback lines a log collector cannot parse; exit status 1, so the pod restarts.
        # The cause leads the message, where `kubectl logs | tail -1` and `stack up` show it.
        logger.critical("%s stopped: %s", label, stop_cause(exc), exc_info=True)
        raise SystemExit(1) from None


def stop_cause(exc: BaseException) -> str:
    """What stopped a process, in one line: a ``GroundedError``'s own message (it names the
    file or setting), otherwise the exception's type and text."""
    if isinstance(exc, GroundedError):
        return exc.message
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__

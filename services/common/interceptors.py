"""Server interceptor: request id, access log, metrics and the one error → status mapping."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator
from typing import Any, cast

import grpc
from google.protobuf.message import DecodeError
from grpc import aio

from services.common import errors, status
from services.common.logs import request_id_var
from services.common.metrics import RPC_LATENCY, RPC_REQUESTS

logger = logging.getLogger(__name__)

REQUEST_ID_KEY = "x-request-id"
MAX_REQUEST_ID_CHARS = 128
_DEADLINE_SLACK_S = 0.1
# How much of a refused id the log line quotes (escaped with ascii()).
_QUOTED_ID_CHARS = 64


def request_id_problem(value: object) -> str:
    """Why ``value`` cannot be a request id, or "" when it can: 1 to 128 printable ASCII
    characters (0x20-0x7E). The id goes back in the response headers and on to the services
    this one calls, and gRPC refuses any other character in an ASCII header: echoed, a caller's
    'café' failed the whole call (INTERNAL, "Invalid metadata")."""
    if not isinstance(value, str):
        return "it is not text"
    if not value:
        return "it is empty"
    if len(value) > MAX_REQUEST_ID_CHARS:
        return f"it is {len(value)} characters long, over {MAX_REQUEST_ID_CHARS}"
    for at, char in enumerate(value):
        if not " " <= char <= "~":
            return f"it holds {char!a} at {at}, and only printable ASCII (0x20-0x7E) is kept"
    return ""


def _incoming_request_id(context: aio.ServicerContext[Any, Any]) -> tuple[str, str]:
    """The caller's x-request-id, or a new one when it sent none or one ``request_id_problem``
    refuses; and that refused id, quoted and escaped (else "")."""
    for key, value in context.invocation_metadata() or ():
        if key == REQUEST_ID_KEY:
            problem = request_id_problem(value)
            if not problem:
                return str(value), ""  # text, as request_id_problem checked
            quoted = ascii(value[:_QUOTED_ID_CHARS] if isinstance(value, str) else value)
            return uuid.uuid4().hex, f"{quoted}: {problem}"
    return uuid.uuid4().hex, ""


# Health checks (a kubelet probes every few seconds) are answered as the library writes them:
# no access-log line, no RPC metrics, no span (tracing.server_interceptors), so that they neither
# flood the logs nor set a floor of fast OK calls under every request-rate graph.
HEALTH_PREFIX = "/grpc.health.v1.Health/"


def _always() -> bool:
    return True


class ServiceInterceptor(aio.ServerInterceptor):
    """Wraps every unary-unary handler, and every unary-stream handler written as an async
    generator (StreamAnswer), of this server; health checks pass through untouched.

    ``ready`` says whether the server has finished warming up. Until it has, a call to any
    method of ``gated`` (the service's own APIs, never health or reflection) is refused
    UNAVAILABLE / NOT_READY, so that nothing answers before its models and data are loaded: a
    validator without its entailment model would judge on words alone, a synthesis service
    without its answerability model on keywords alone. A load balancer that routes by health
    never sends such calls; a client connected straight to a restarted pod can.

    ``max_concurrent`` (0 = no limit) bounds the calls it wraps that run at once: one more is
    refused RESOURCE_EXHAUSTED / OVERLOADED before its handler runs (logged and counted like any
    failed call). Health checks are not wrapped, so a server busy at its limit still answers
    its probes; ``setting`` names the limit in the refusal."""

    def __init__(
        self,
        service: str,
        *,
        ready: Callable[[], bool] = _always,
        gated: Collection[str] = (),
        max_concurrent: int = 0,
        setting: str = "",
    ) -> None:
        self.service = service
        self._ready = ready
        self._gated = frozenset(gated)
        self._max_concurrent = max_concurrent
        self._setting = setting or "the server's limit"
        self.in_flight = 0  # calls of this server's own methods under way (one event loop)

    @contextlib.contextmanager
    def _slot(self) -> Iterator[None]:
        """One call's place among those running, or OverloadedError when none is free."""
        limit = self._max_concurrent
        if limit and self.in_flight >= limit:
            raise errors.OverloadedError(
                f"the {self.service} server is already handling {limit} calls, as many as it "
                f"takes at once ({self._setting}); retry with backoff",
                metadata={"max_concurrent_rpcs": str(limit)},
            )
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        full_method = handler_call_details.method
        if handler is None or full_method.startswith(HEALTH_PREFIX):
            return handler
        method = full_method.rsplit("/", 1)[-1]
        service = self.service
        gated = full_method.split("/")[1] in self._gated if full_method.count("/") == 2 else False
        ready = self._ready

        def check_ready() -> None:
            if gated and not ready():
                raise errors.NotReadyError(
                    f"the {service} service is still warming up (loading its models and data) "
                    "and answers nothing until it is ready; retry shortly"
                )

        # An aio server hands its handlers aio contexts; the sync-typed stub signature says otherwise.
        if handler.unary_unary is not None:
            inner = cast(
                Callable[[Any, aio.ServicerContext[Any, Any]], Awaitable[Any]], handler.unary_unary
            )

            parse_unary = _parser(handler.request_deserializer)

            async def unary(raw: Any, context: aio.ServicerContext[Any, Any]) -> Any:
                async with _rpc(service, method, context):
                    check_ready()
                    with self._slot():
                        return await inner(parse_unary(raw), context)
                raise AssertionError("unreachable: _rpc aborts or re-raises")  # pragma: no cover

            # The request arrives as bytes and is parsed inside the call, so a malformed one is
            # INVALID_ARGUMENT with a field violation, logged and counted like any other.
            return grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=None, response_serializer=handler.response_serializer
            )
        # Only streams written as async generators (ours); health's Watch writes to its context.
        if handler.unary_stream is not None and inspect.isasyncgenfunction(handler.unary_stream):
            produce = cast(
                Callable[[Any, aio.ServicerContext[Any, Any]], AsyncIterator[Any]],
                handler.unary_stream,
            )

            parse_stream = _parser(handler.request_deserializer)

            async def stream(
                raw: Any, context: aio.ServicerContext[Any, Any]
            ) -> AsyncIterator[Any]:
                async with _rpc(service, method, context):
                    check_ready()
                    with self._slot():
                        async for response in produce(parse_stream(raw), context):
                            yield response

            return grpc.unary_stream_rpc_method_handler(
                stream, request_deserializer=None, response_serializer=handler.response_serializer
            )
        return handler


# A caller's mistake is routine (INFO); trouble on this side or downstream (a dependency or model
# that failed, an index that does not add up) is an ERROR, so that an outage stands out from a
# client's typo in the logs; the rest (not ready yet, the caller's own deadline) a WARNING.
_CALLER_ERRORS: tuple[type[errors.GroundedError], ...] = (
    errors.InvalidInputError,
    errors.NotFoundError,
)
_SERVER_ERRORS: tuple[type[errors.GroundedError], ...] = (
    errors.DependencyError,
    errors.ModelUnavailableError,
    errors.IndexIntegrityError,
    errors.CorpusFormatError,
)


def _level_for(exc: errors.GroundedError, code: grpc.StatusCode) -> int:
    if isinstance(exc, _CALLER_ERRORS):
        return logging.INFO
    if isinstance(exc, _SERVER_ERRORS) or code == grpc.StatusCode.INTERNAL:
        return logging.ERROR
    return logging.WARNING


def _parser(deserialize: Callable[[bytes], Any] | None) -> Callable[[Any], Any]:
    """The handler's request parser, raising ``InvalidInputError`` for bytes that are not its
    message (grpc's own parsing would answer UNKNOWN: "Unexpected DecodeError"). A string field
    that is not UTF-8 is the usual cause; which field, the parser does not say."""
    if deserialize is None:
        return lambda raw: raw

    def parse(raw: Any) -> Any:
        try:
            return deserialize(raw)
        except DecodeError as exc:
            cause = str(exc).rsplit(": ", 1)[-1]  # "Error parsing message with type 'T': why"
            hint = (
                "every string field must be valid UTF-8"
                if "utf-8" in str(exc).lower() or isinstance(exc.__cause__, UnicodeDecodeError)
                else "the bytes are not this method's request message (check that the client "
                "was built from the same proto)"
            )
            message = f"the request does not parse ({cause}): {hint}"
            raise errors.InvalidInputError(
                [errors.FieldViolation("", message)], message=message
            ) from exc

    return parse


@contextlib.asynccontextmanager
async def _rpc(
    service: str, method: str, context: aio.ServicerContext[Any, Any]
) -> AsyncIterator[None]:
    """One call: request id, the error → status mapping, access log and metrics."""
    request_id, refused = _incoming_request_id(context)
    token = request_id_var.set(request_id)
    if refused:
        # The caller's mistake (INFO); this line, under the new id, ties the two together.
        logger.info(
            "replaced the caller's x-request-id %s",
            refused,
            extra={"method": method},
        )
    started = time.perf_counter()
    code: Any = grpc.StatusCode.OK
    reason = ""  # the ErrorInfo reason the caller gets ("" for OK and gRPC's own statuses)
    try:
        await context.send_initial_metadata(((REQUEST_ID_KEY, request_id),))
        yield
    except errors.GroundedError as exc:
        code, reason = status.code_for(exc), exc.reason
        logger.log(
            _level_for(exc, code),
            "request failed",
            extra={"method": method, "code": code.name, "reason": exc.reason, "error": exc.message},
        )
        rich = status.to_status(exc)
        await context.abort(rich.code, rich.details, rich.trailing_metadata)
    except aio.AbortError:
        code = context.code() or grpc.StatusCode.UNKNOWN
        raise
    except (asyncio.CancelledError, GeneratorExit):
        # The caller's deadline passed or it went away: gRPC cancels the handler (a stream's
        # generator is closed). Count it as what the caller saw, not as the OK the code started
        # with. A client whose deadline fires resets the stream a little before ours runs out,
        # hence the slack.
        remaining = context.time_remaining()
        expired = remaining is not None and remaining <= _DEADLINE_SLACK_S
        code = grpc.StatusCode.DEADLINE_EXCEEDED if expired else grpc.StatusCode.CANCELLED
        raise
    except Exception as exc:
        if isinstance(exc, NotImplementedError) and context.code() == grpc.StatusCode.UNIMPLEMENTED:
            # A generated servicer's default for a method nobody implemented (it sets the code,
            # then raises): what gRPC itself says for an unknown method. Any other
            # NotImplementedError is a bug deeper down: INTERNAL, with its traceback.
            code = grpc.StatusCode.UNIMPLEMENTED
            logger.warning("method not implemented", extra={"method": method})
            await context.abort(code, f"{method} is not implemented by this server")
        else:
            code, reason = grpc.StatusCode.INTERNAL, status.INTERNAL_REASON
            logger.exception("unhandled error", extra={"method": method})
            rich = status.internal_status()
            await context.abort(rich.code, rich.details, rich.trailing_metadata)
    finally:
        elapsed = time.perf_counter() - started
        code_name = code.name if isinstance(code, grpc.StatusCode) else str(code)
        RPC_REQUESTS.labels(service, method, code_name, reason).inc()
        RPC_LATENCY.labels(service, method).observe(elapsed)
        logger.info(
            "rpc",
            extra={
                "method": method,
                "code": code_name,
                "duration_ms": round(elapsed * 1000, 3),
                "request_id": request_id,  # also when closed from another task (below)
            },
        )
        # A stream whose caller went away after a message is closed by gRPC from another task,
        # in another context: there is nothing of ours to restore there (ValueError).
        with contextlib.suppress(ValueError):
            request_id_var.reset(token)

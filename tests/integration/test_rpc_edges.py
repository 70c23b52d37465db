"""Calls outside the answer path behave as gRPC users expect: a caller that goes away in the
middle of a stream is an ordinary CANCELLED (counted and logged as such under its request id,
with no ERROR line: alerts fire on those), health's List answers, and a method nobody
implemented is UNIMPLEMENTED."""

from __future__ import annotations

import asyncio
import gc
import logging

import grpc
import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common import errors
from services.common.config import EnvReader, ServerSettings
from services.common.interceptors import ServiceInterceptor
from services.common.metrics import RPC_REQUESTS, SERVING_STATE
from services.common.server import GrpcService
from tests.integration.conftest import Stack
from tests.support.grpc_helpers import counter_reaches, error_reason, retry_delay_s

pytestmark = pytest.mark.integration

QUESTION = "What is the punishment for theft?"
SYNTHESIS = spb.DESCRIPTOR.services_by_name["SynthesisService"].full_name


@pytest.mark.parametrize("after", [1, 2], ids=["after-the-evidence", "after-a-sentence"])
async def test_a_stream_cancelled_by_its_caller_logs_no_error(
    stack: Stack, caplog: pytest.LogCaptureFixture, after: int
) -> None:
    # The extractive answer is one short sentence: its last events can be written before the
    # caller's cancel arrives, and the stream then ends OK, which tests nothing here. A loaded
    # machine makes that likelier, so try again until a cancel lands mid-stream (at most 5).
    codes = []
    for attempt in range(5):
        request_id = f"cancel-after-{after}-{attempt}"
        caplog.clear()
        with caplog.at_level(logging.INFO):
            async with grpc.aio.insecure_channel(stack.synthesis) as channel:
                call = spb_grpc.SynthesisServiceStub(channel).StreamAnswer(
                    spb.SynthesizeAnswerRequest(question=QUESTION),
                    timeout=30,
                    metadata=(("x-request-id", request_id),),
                )
                kinds = []
                async for event in call:
                    kinds.append(event.WhichOneof("event"))
                    if len(kinds) == after:
                        call.cancel()
                        break
            await asyncio.sleep(0.3)
            gc.collect()  # a task's exception nobody read is logged when the task is collected
            await asyncio.sleep(0)
        assert kinds[:after] == ["evidence", "sentence"][:after]
        # Closing the stream from gRPC's own task once failed to restore the request-id context
        # there ("was created in a different Context"), and asyncio logged the task's exception.
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
        (access,) = [
            r
            for r in caplog.records
            if r.getMessage() == "rpc"
            and getattr(r, "method", "") == "StreamAnswer"
            and getattr(r, "request_id", "") == request_id
        ]
        codes.append(access.code)  # type: ignore[attr-defined]
        if access.code != "OK":  # type: ignore[attr-defined]
            break
    # Only a stream the server finished before the cancel arrived may end OK.
    assert codes[-1] == "CANCELLED", codes


@pytest.mark.parametrize("service", ["retrieval", "synthesis", "validator"])
async def test_health_list_names_every_service_with_its_status(stack: Stack, service: str) -> None:
    """grpc.health.v1.Health/List, which reflection advertises (the library leaves it
    unimplemented; it used to answer INTERNAL)."""
    async with grpc.aio.insecure_channel(getattr(stack, service)) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).List(
            health_pb2.HealthListRequest(), timeout=10
        )
    name = f"grounded.{service}.v1.{service.capitalize()}Service"
    assert {k: v.status for k, v in reply.statuses.items()} == {
        "": health_pb2.HealthCheckResponse.SERVING,
        name: health_pb2.HealthCheckResponse.SERVING,
    }


async def _call_through_our_interceptor(
    servicer: spb_grpc.SynthesisServiceServicer,
    *,
    ready: bool = True,
    deadline_s: float = 10,
) -> grpc.aio.AioRpcError:
    """Serve ``servicer`` on a bare server with our interceptor; the error SynthesizeAnswer
    raises (called with a deadline ``deadline_s`` seconds away)."""
    server = grpc.aio.server(
        interceptors=[ServiceInterceptor("test", ready=lambda: ready, gated=[SYNTHESIS])]
    )
    spb_grpc.add_SynthesisServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await spb_grpc.SynthesisServiceStub(channel).SynthesizeAnswer(
                    spb.SynthesizeAnswerRequest(question=QUESTION), timeout=deadline_s
                )
    finally:
        await server.stop(None)
    return caught.value


async def test_a_method_a_servicer_leaves_unimplemented_is_unimplemented() -> None:
    """A generated servicer's default raises NotImplementedError: through our interceptor that
    is UNIMPLEMENTED, as gRPC says for an unknown method, not INTERNAL."""
    # The generated base class: every method raises NotImplementedError.
    error = await _call_through_our_interceptor(spb_grpc.SynthesisServiceServicer())
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED
    assert error.details() == "SynthesizeAnswer is not implemented by this server"


class _Broken(spb_grpc.SynthesisServiceServicer):
    async def SynthesizeAnswer(self, request: object, context: object) -> object:
        raise NotImplementedError("reconstruct_all is not available for this index")


async def test_a_not_implemented_error_from_deeper_down_is_internal() -> None:
    """Only a generated default (which sets UNIMPLEMENTED first) is UNIMPLEMENTED; the same
    exception raised by the code a handler calls is a bug: INTERNAL, logged with its traceback."""
    error = await _call_through_our_interceptor(_Broken())
    assert error.code() == grpc.StatusCode.INTERNAL


async def test_a_server_still_warming_up_answers_unavailable_not_ready() -> None:
    """Until warm-up has finished, a service's own methods answer UNAVAILABLE / NOT_READY
    before the servicer runs (a validator without its model would judge on words alone)."""
    error = await _call_through_our_interceptor(_Broken(), ready=False)
    assert error.code() == grpc.StatusCode.UNAVAILABLE
    assert "still warming up" in (error.details() or "")
    assert error_reason(error) == "NOT_READY"
    assert retry_delay_s(error) == 2.0  # google.rpc.RetryInfo: retry no sooner
    # Once warm, the same call reaches the servicer (here: its bug, INTERNAL).
    assert (await _call_through_our_interceptor(_Broken(), ready=True)).code() == (
        grpc.StatusCode.INTERNAL
    )


async def test_health_checks_pass_through_unlogged_and_uncounted(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    """A kubelet probes every few seconds: health checks get no access-log line and no RPC
    metrics (they would flood the logs and set a floor under every request-rate graph)."""
    counted = RPC_REQUESTS.labels("validator", "Check", "OK", "")
    before = counted._value.get()
    with caplog.at_level(logging.DEBUG):
        async with grpc.aio.insecure_channel(stack.validator) as channel:
            for _ in range(3):
                reply = await health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), timeout=10
                )
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
    assert [r for r in caplog.records if getattr(r, "method", "") == "Check"] == []
    assert counted._value.get() == before


async def test_a_service_answers_only_once_warm() -> None:
    """GrpcService, as every service runs it: bound and NOT_SERVING during warm-up, its own
    methods UNAVAILABLE / NOT_READY until mark_serving, then served."""
    settings = ServerSettings.from_env(
        EnvReader("TEST_", {"TEST_PORT": "0"}), default_port=0, default_metrics_port=-1
    )
    service = GrpcService(label="synthesis", service_names=[SYNTHESIS], settings=settings)
    serving = SERVING_STATE.labels("synthesis")
    port = await service.start(
        lambda server: spb_grpc.add_SynthesisServiceServicer_to_server(_Broken(), server)
    )
    assert serving._value.get() == 0  # grounded_serving follows health
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = spb_grpc.SynthesisServiceStub(channel)
            health = health_pb2_grpc.HealthStub(channel)
            request = spb.SynthesizeAnswerRequest(question=QUESTION)
            check = health_pb2.HealthCheckRequest(service=SYNTHESIS)
            assert (await health.Check(check, timeout=10)).status == (
                health_pb2.HealthCheckResponse.NOT_SERVING
            )
            with pytest.raises(grpc.aio.AioRpcError) as cold:
                await stub.SynthesizeAnswer(request, timeout=10)
            assert error_reason(cold.value) == "NOT_READY"
            await service.mark_serving()
            assert (await health.Check(check, timeout=10)).status == (
                health_pb2.HealthCheckResponse.SERVING
            )
            assert serving._value.get() == 1
            with pytest.raises(grpc.aio.AioRpcError) as warm:
                await stub.SynthesizeAnswer(request, timeout=10)
            assert warm.value.code() == grpc.StatusCode.INTERNAL  # the servicer ran
            await service.mark_not_serving()  # a shipped model failed
            assert serving._value.get() == 0
            await service.mark_serving()
    finally:
        await service.stop(0)
    assert serving._value.get() == 0  # drained


class _Failing(spb_grpc.SynthesisServiceServicer):
    def __init__(self, error: errors.GroundedError) -> None:
        self.error = error

    async def SynthesizeAnswer(self, request: object, context: object) -> object:
        raise self.error


@pytest.mark.parametrize(
    ("error", "level"),
    [
        (errors.InvalidInputError([errors.FieldViolation("question", "empty")]), logging.INFO),
        (
            errors.NotFoundError("no IPC_9999", resource_type="document", resource_name="IPC_9999"),
            logging.INFO,
        ),
        (errors.NotReadyError("warming up"), logging.WARNING),
        (errors.DependencyUnavailableError("validator", "UNAVAILABLE"), logging.ERROR),
        (errors.ModelUnavailableError("model failed"), logging.ERROR),
    ],
    ids=["invalid-input", "not-found", "not-ready", "dependency", "model"],
)
async def test_a_failed_call_is_logged_at_the_level_of_whose_fault_it_is(
    caplog: pytest.LogCaptureFixture, error: errors.GroundedError, level: int
) -> None:
    """A caller's mistake is routine (INFO); a dependency or model that failed is an ERROR, so
    that an outage stands out in the logs from a client's typo."""
    with caplog.at_level(logging.DEBUG):
        await _call_through_our_interceptor(_Failing(error))
    (line,) = [r for r in caplog.records if r.getMessage() == "request failed"]
    assert line.levelno == level, (line.levelname, error.reason)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (
            errors.InvalidInputError([errors.FieldViolation("question", "empty")]),
            "INVALID_ARGUMENT",
        ),
        (errors.ModelUnavailableError("model failed"), "UNAVAILABLE"),
        (errors.DependencyUnavailableError("validator", "UNAVAILABLE"), "UNAVAILABLE"),
        # The caller's deadline as our own code finds it spent (budget.bounded, retrieval's and
        # the validator's checks): reason DEADLINE_EXCEEDED, not "" (see the test below).
        (errors.DeadlineExceededError("deadline exceeded during retrieval"), "DEADLINE_EXCEEDED"),
    ],
    ids=["invalid-input", "model", "dependency", "deadline-found-by-our-code"],
)
async def test_a_failed_call_is_counted_with_its_reason(
    error: errors.GroundedError, code: str
) -> None:
    """grounded_rpc_requests_total tells a model that failed from a dependency that did, both
    UNAVAILABLE: its reason label is the ErrorInfo reason the caller got."""
    counted = RPC_REQUESTS.labels("test", "SynthesizeAnswer", code, error.reason)
    before = counted._value.get()
    caught = await _call_through_our_interceptor(_Failing(error))
    assert caught.code().name == code and error_reason(caught) == error.reason
    assert await counter_reaches(counted, before + 1) == before + 1


class _Slow(spb_grpc.SynthesisServiceServicer):
    async def SynthesizeAnswer(self, request: object, context: object) -> object:
        await asyncio.sleep(10)
        raise AssertionError("not cancelled at the caller's deadline")


async def test_a_deadline_grpc_cancels_the_call_at_is_counted_without_a_reason() -> None:
    """The caller's deadline passing while the handler runs: gRPC cancels it, no ErrorInfo
    reaches the caller, and the count's reason is "" (docs/RELIABILITY.md, "Metrics"; the same
    deadline found spent by our own code is reason DEADLINE_EXCEEDED, above)."""
    counted = RPC_REQUESTS.labels("test", "SynthesizeAnswer", "DEADLINE_EXCEEDED", "")
    before = counted._value.get()
    caught = await _call_through_our_interceptor(_Slow(), deadline_s=0.3)
    assert caught.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert (
        await counter_reaches(counted, before + 1) == before + 1
    )  # counted as the handler unwinds


async def test_an_unexpected_exception_is_counted_as_internal() -> None:
    counted = RPC_REQUESTS.labels("test", "SynthesizeAnswer", "INTERNAL", "INTERNAL")
    before = counted._value.get()
    await _call_through_our_interceptor(_Broken())
    assert await counter_reaches(counted, before + 1) == before + 1


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
async def test_reflection_answers_both_protocol_versions(stack: Stack, version: str) -> None:
    """grpcio-reflection ships only v1alpha, and tools that ask v1 first and do not fall back
    found nothing (UNIMPLEMENTED); both now list the services and describe v1's own file."""
    from grpc_reflection.v1alpha import reflection_pb2 as rpb

    async with grpc.aio.insecure_channel(stack.synthesis) as channel:
        info = channel.stream_stream(
            f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
            request_serializer=rpb.ServerReflectionRequest.SerializeToString,
            response_deserializer=rpb.ServerReflectionResponse.FromString,
        )
        listed, described = [
            reply
            async for reply in info(
                iter(
                    [
                        rpb.ServerReflectionRequest(list_services=""),
                        rpb.ServerReflectionRequest(
                            file_containing_symbol="grpc.reflection.v1.ServerReflection"
                        ),
                    ]
                ),
                timeout=10,
            )
        ]
    names = {s.name for s in listed.list_services_response.service}
    assert {SYNTHESIS, "grpc.reflection.v1.ServerReflection"} <= names
    assert "grpc.reflection.v1alpha.ServerReflection" in names
    from google.protobuf import descriptor_pb2

    (raw,) = described.file_descriptor_response.file_descriptor_proto
    file = descriptor_pb2.FileDescriptorProto.FromString(raw)
    assert (file.name, file.package) == (
        "grpc/reflection/v1/reflection.proto",
        "grpc.reflection.v1",
    )
    assert file.service[0].method[0].input_type == ".grpc.reflection.v1.ServerReflectionRequest"

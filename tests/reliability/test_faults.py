"""Fault injection with real servers: a dependency slow, down or lying must never let an
unvalidated answer out, a caller's deadline is honoured and propagated, a Redis outage is a bypass."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grounded.type.v1 import validation_pb2
from grounded.validator.v1 import validator_service_pb2 as vpb
from prometheus_client import REGISTRY

from services.common.evidence import ScoredChunk
from services.common.refusal import REFUSAL
from services.common.server import ServiceApp
from services.synthesis import server as synthesis_server
from services.synthesis.config import SynthesisConfig
from services.validator import server as validator_server
from services.validator.config import ValidatorConfig
from stack.inprocess import start_in_process
from tests.reliability.fakes import (
    QUESTION,
    FakeRetrieval,
    FakeValidator,
    section_passages,
    serve_fake,
)
from tests.support.grpc_helpers import error_reason
from tests.support.redis_server import RedisServer, free_port

pytestmark = pytest.mark.integration

Outcome = spb.SynthesizeAnswerResponse | grpc.aio.AioRpcError


async def _start_synthesis(retrieval: str, validator: str, **env: str) -> ServiceApp:
    app = synthesis_server.create_app(
        SynthesisConfig.from_env(
            {
                "SYNTHESIS_PORT": "0",
                "SYNTHESIS_METRICS_PORT": "0",
                "SYNTHESIS_RETRIEVAL_ADDR": retrieval,
                "SYNTHESIS_VALIDATOR_ADDR": validator,
                **{f"SYNTHESIS_{k}": v for k, v in env.items()},
            }
        )
    )
    await app.start()
    return app


async def _ask(app: ServiceApp, *, deadline_s: float = 10, question: str = QUESTION) -> Outcome:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
        stub = spb_grpc.SynthesisServiceStub(channel)
        try:
            response: spb.SynthesizeAnswerResponse = await stub.SynthesizeAnswer(
                spb.SynthesizeAnswerRequest(question=question), timeout=deadline_s
            )
            return response
        except grpc.aio.AioRpcError as err:
            return err


def _assert_no_answer_escaped(outcome: Outcome, codes: set[grpc.StatusCode]) -> None:
    """Either an error with one of ``codes``, or exactly the refusal; never an answer."""
    if isinstance(outcome, grpc.aio.AioRpcError):
        assert outcome.code() in codes, (outcome.code(), outcome.details())
        return
    assert outcome.status != spb.ANSWER_STATUS_ANSWERED, outcome.answer
    assert outcome.answer == REFUSAL
    assert not outcome.citations


@pytest.fixture(scope="module")
def passages() -> list[ScoredChunk]:
    return section_passages("420")


@pytest.fixture(scope="module")
async def fake_retrieval(passages: list[ScoredChunk]) -> AsyncIterator[str]:
    server, address = await serve_fake(FakeRetrieval(passages))
    yield address
    await server.stop(0)


@pytest.fixture(scope="module")
async def real_validator() -> AsyncIterator[str]:
    app = validator_server.create_app(
        ValidatorConfig.from_env({"VALIDATOR_PORT": "0", "VALIDATOR_METRICS_PORT": "0"})
    )
    await app.start()
    yield f"127.0.0.1:{app.port}"
    await app.stop(0)


class TestValidatorFaults:
    async def test_control_fake_retrieval_and_real_validator_answer(
        self, fake_retrieval: str, real_validator: str
    ) -> None:
        # Without a fault the same set-up answers: the refusals below are caused by the faults.
        app = await _start_synthesis(fake_retrieval, real_validator)
        try:
            outcome = await _ask(app)
        finally:
            await app.stop(0)
        assert isinstance(outcome, spb.SynthesizeAnswerResponse)
        assert outcome.status == spb.ANSWER_STATUS_ANSWERED, outcome.refusal_reason
        assert "[IPC_420_" in outcome.answer

    async def test_validator_down_never_answers(self, fake_retrieval: str) -> None:
        app = await _start_synthesis(fake_retrieval, f"127.0.0.1:{free_port()}")
        try:
            outcome = await _ask(app)
        finally:
            await app.stop(0)
        _assert_no_answer_escaped(outcome, {grpc.StatusCode.UNAVAILABLE})
        assert isinstance(outcome, grpc.aio.AioRpcError)
        assert error_reason(outcome) == "DEPENDENCY_UNAVAILABLE"

    async def test_validator_slower_than_its_limit_never_answers(self, fake_retrieval: str) -> None:
        # The fake says GROUNDED, but only after the validator limit: a late yes is no verdict.
        fake = FakeValidator(delay_s=3.0)
        server, address = await serve_fake(fake)
        app = await _start_synthesis(fake_retrieval, address, VALIDATOR_TIMEOUT_S="0.3")
        try:
            started = time.monotonic()
            outcome = await _ask(app, deadline_s=10)
            elapsed = time.monotonic() - started
        finally:
            await app.stop(0)
            await server.stop(0)
        _assert_no_answer_escaped(outcome, {grpc.StatusCode.DEADLINE_EXCEEDED})
        assert isinstance(outcome, grpc.aio.AioRpcError)
        assert error_reason(outcome) == "DEPENDENCY_TIMEOUT"
        assert elapsed < 2.5, elapsed
        remaining = fake.log.time_remaining[0]
        assert remaining is not None and remaining <= 0.3 + 0.05, remaining

    async def test_validator_slower_than_caller_deadline_never_answers(
        self, fake_retrieval: str
    ) -> None:
        fake = FakeValidator(delay_s=3.0)
        server, address = await serve_fake(fake)
        app = await _start_synthesis(fake_retrieval, address)
        try:
            started = time.monotonic()
            outcome = await _ask(app, deadline_s=1.0)
            elapsed = time.monotonic() - started
        finally:
            await app.stop(0)
            await server.stop(0)
        _assert_no_answer_escaped(outcome, {grpc.StatusCode.DEADLINE_EXCEEDED})
        assert elapsed < 2.0, elapsed
        remaining = fake.log.time_remaining[0]
        assert remaining is not None and remaining <= 1.05, remaining

    @pytest.mark.parametrize(
        "code",
        [
            grpc.StatusCode.INTERNAL,
            grpc.StatusCode.INVALID_ARGUMENT,
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            grpc.StatusCode.UNAVAILABLE,
        ],
    )
    async def test_validator_error_never_answers(
        self, fake_retrieval: str, code: grpc.StatusCode
    ) -> None:
        fake = FakeValidator(code=code)
        server, address = await serve_fake(fake)
        app = await _start_synthesis(fake_retrieval, address)
        try:
            outcome = await _ask(app)
        finally:
            await app.stop(0)
            await server.stop(0)
        # The draft reached the failing validator: the error, not a missed call, refused it.
        assert fake.log.time_remaining, "the validator was never asked"
        _assert_no_answer_escaped(outcome, {grpc.StatusCode.UNAVAILABLE})

    @pytest.mark.parametrize(
        "response",
        [
            vpb.ValidateAnswerResponse(),
            vpb.ValidateAnswerResponse(verdict=99),  # type: ignore[arg-type]
            vpb.ValidateAnswerResponse(
                verdict=validation_pb2.VALIDATION_VERDICT_NOT_GROUNDED,
                reason=validation_pb2.VALIDATION_REASON_LOW_COVERAGE,
            ),
        ],
        ids=["empty", "unknown-verdict", "not-grounded"],
    )
    async def test_validator_without_a_grounded_verdict_means_refusal(
        self, fake_retrieval: str, response: vpb.ValidateAnswerResponse
    ) -> None:
        fake = FakeValidator(response=response)
        server, address = await serve_fake(fake)
        app = await _start_synthesis(fake_retrieval, address)
        try:
            outcome = await _ask(app)
        finally:
            await app.stop(0)
            await server.stop(0)
        assert fake.log.finished, "the validator was never asked"
        _assert_no_answer_escaped(outcome, set())


class TestRetrievalDeadline:
    async def test_slow_retrieval_caller_deadline_honoured_and_propagated(
        self, passages: list[ScoredChunk], real_validator: str
    ) -> None:
        fake = FakeRetrieval(passages, delay_s=4.0)
        server, address = await serve_fake(fake)
        app = await _start_synthesis(address, real_validator, RETRIEVAL_TIMEOUT_S="30")
        ended_before = {code: _rpc_count(code) for code in ("OK", "DEADLINE_EXCEEDED", "CANCELLED")}
        try:
            started = time.monotonic()
            outcome = await _ask(app, deadline_s=1.0)
            elapsed = time.monotonic() - started
            # Give a retrieval call that outlived the deadline time to show itself.
            await asyncio.sleep(0.5)
        finally:
            await app.stop(0)
            await server.stop(0)
        assert isinstance(outcome, grpc.aio.AioRpcError)
        assert outcome.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        # Well under the fake's 4 s: slack for a busy CI machine, still telling the two apart.
        assert 0.9 <= elapsed < 2.5, elapsed
        # Propagated: retrieval got the caller's remaining time, not its own 30 s limit ...
        remaining = fake.log.time_remaining[0]
        # (grpc-timeout is sent at millisecond-ish precision and rounded up, hence the slack.)
        assert remaining is not None and 0.5 < remaining <= 1.05, remaining
        # ... and its work stopped when that ran out instead of finishing for nobody.
        assert len(fake.log.cancelled) == 1 and not fake.log.finished
        assert fake.log.cancelled[0] - started < 2.5
        # The synthesis side counts the call as ended by its caller's deadline, not as OK.
        ended = {code: _rpc_count(code) - before for code, before in ended_before.items()}
        assert ended == {"OK": 0, "DEADLINE_EXCEEDED": 1, "CANCELLED": 0}, ended

    async def test_slow_retrieval_bounded_by_stage_limit(
        self, passages: list[ScoredChunk], real_validator: str
    ) -> None:
        fake = FakeRetrieval(passages, delay_s=4.0)
        server, address = await serve_fake(fake)
        app = await _start_synthesis(address, real_validator, RETRIEVAL_TIMEOUT_S="0.5")
        try:
            started = time.monotonic()
            outcome = await _ask(app, deadline_s=10)
            elapsed = time.monotonic() - started
            await asyncio.sleep(0.3)
        finally:
            await app.stop(0)
            await server.stop(0)
        assert isinstance(outcome, grpc.aio.AioRpcError)
        assert outcome.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert error_reason(outcome) == "DEPENDENCY_TIMEOUT"
        assert elapsed < 2.5, elapsed  # the fake would take 4 s
        remaining = fake.log.time_remaining[0]
        assert remaining is not None and remaining <= 0.55, remaining
        assert len(fake.log.cancelled) == 1 and not fake.log.finished

    @pytest.mark.parametrize(
        ("limit_s", "deadline_s", "reason", "asked_at_most_s"),
        [
            ("0.5", 10.0, "DEPENDENCY_TIMEOUT", 0.55),  # the stage limit ends it
            ("30", 0.8, "DEADLINE_EXCEEDED", 0.85),  # the caller's deadline ends it
        ],
    )
    async def test_slow_retrieval_bounds_get_document_as_it_bounds_answers(
        self,
        passages: list[ScoredChunk],
        real_validator: str,
        limit_s: str,
        deadline_s: float,
        reason: str,
        asked_at_most_s: float,
    ) -> None:
        fake = FakeRetrieval(passages, delay_s=4.0)
        server, address = await serve_fake(fake)
        app = await _start_synthesis(address, real_validator, RETRIEVAL_TIMEOUT_S=limit_s)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
                stub = spb_grpc.SynthesisServiceStub(channel)
                started = time.monotonic()
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.GetDocument(
                        spb.GetDocumentRequest(doc_id=passages[0].chunk.doc_id),
                        timeout=deadline_s,
                    )
                elapsed = time.monotonic() - started
        finally:
            await app.stop(0)
            await server.stop(0)
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert elapsed < 2.5, elapsed  # the fake would take 4 s
        # Retrieval was asked with the smaller of the stage limit and the caller's time left.
        (asked,) = fake.log.time_remaining
        assert asked is not None and asked <= asked_at_most_s, asked
        if reason == "DEPENDENCY_TIMEOUT":
            assert error_reason(caught.value) == reason

    async def test_get_document_served_through_a_fake_retrieval(
        self, passages: list[ScoredChunk], real_validator: str
    ) -> None:
        # Control for the test above: without the delay the same call returns the document.
        fake = FakeRetrieval(passages)
        server, address = await serve_fake(fake)
        app = await _start_synthesis(address, real_validator)
        doc_id = passages[0].chunk.doc_id
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
                stub = spb_grpc.SynthesisServiceStub(channel)
                found = await stub.GetDocument(spb.GetDocumentRequest(doc_id=doc_id), timeout=10)
        finally:
            await app.stop(0)
            await server.stop(0)
        assert found.document.doc_id == doc_id and found.index_version == "fake"


def _rpc_count(code: str) -> float:
    """SynthesizeAnswer calls counted with ``code``, whatever their ErrorInfo reason."""
    labels = {"service": "synthesis", "method": "SynthesizeAnswer", "code": code}
    return sum(
        sample.value
        for family in REGISTRY.collect()
        if family.name == "grounded_rpc_requests"
        for sample in family.samples
        if sample.name == "grounded_rpc_requests_total" and labels.items() <= sample.labels.items()
    )


def _cache_events(outcome: str) -> float:
    value = REGISTRY.get_sample_value("grounded_retrieval_cache_events_total", {"outcome": outcome})
    return value or 0.0


QUESTIONS = (
    QUESTION,
    "What is theft?",
    "What is the punishment for murder?",
    "What is the capital of France?",
)


class TestRedisOutage:
    async def test_redis_killed_while_requests_flow_zero_failures_and_bypass_counted(
        self, ipc_index: Path
    ) -> None:
        with RedisServer() as redis:
            stack = await start_in_process(ipc_index, redis_url=redis.url)
            outcomes: list[tuple[str, str, Outcome]] = []
            phase = ["redis up"]
            stop = asyncio.Event()

            async def worker(offset: int) -> None:
                async with grpc.aio.insecure_channel(stack.synthesis) as channel:
                    stub = spb_grpc.SynthesisServiceStub(channel)
                    i = offset
                    while not stop.is_set():
                        question = QUESTIONS[i % len(QUESTIONS)]
                        i += 1
                        current = phase[0]
                        try:
                            outcome: Outcome = await stub.SynthesizeAnswer(
                                spb.SynthesizeAnswerRequest(question=question), timeout=10
                            )
                        except grpc.aio.AioRpcError as err:
                            outcome = err
                        outcomes.append((current, question, outcome))

            try:
                workers = [asyncio.ensure_future(worker(k)) for k in range(3)]
                await asyncio.sleep(2.0)
                bypass_before = _cache_events("bypass")
                hits_before = _cache_events("hit")
                assert hits_before > 0, "the cache never hit while Redis was up"
                redis.kill()
                phase[0] = "redis down"
                await asyncio.sleep(2.5)
                bypass_during = _cache_events("bypass") - bypass_before
                served_during = sum(1 for p, _, _ in outcomes if p == "redis down")
                # Redis comes back: after the back-off the cache is used again.
                await asyncio.to_thread(redis.start)
                phase[0] = "redis back"
                looked_up = _cache_events("hit") + _cache_events("miss")
                deadline = time.monotonic() + 8
                while _cache_events("hit") + _cache_events("miss") == looked_up:
                    assert time.monotonic() < deadline, (
                        "the cache was not used again after Redis came back"
                    )
                    await asyncio.sleep(0.2)
                stop.set()
                await asyncio.gather(*workers)
            finally:
                stop.set()
                await stack.stop()

        failures = [(p, q, o) for p, q, o in outcomes if isinstance(o, grpc.aio.AioRpcError)]
        assert not failures, failures[:3]
        assert served_during >= 3, served_during
        assert bypass_during >= 1
        # The outage changes nothing in what callers get: each question's answer is the same.
        by_question: dict[str, set[tuple[int, str]]] = {}
        for _, question, outcome in outcomes:
            assert isinstance(outcome, spb.SynthesizeAnswerResponse)
            by_question.setdefault(question, set()).add((outcome.status, outcome.answer))
        assert all(len(answers) == 1 for answers in by_question.values()), by_question
        first = next(iter(by_question[QUESTION]))
        assert first[0] == spb.ANSWER_STATUS_ANSWERED

"""OpenAI generator against a real loopback server: request shape, failures, secret hygiene."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import AsyncIterator, Mapping
from typing import Any

import openai
import pytest

from services.common.evidence import Chunk
from services.common.intent import Intent
from services.common.logs import request_id_var
from services.synthesis.generation import (
    GenerationError,
    GenerationFailure,
    GenerationRequest,
    TokenUsage,
)
from services.synthesis.openai_generator import OpenAIGenerator, OpenAISettings
from tests.support.fake_openai import (
    Behaviour,
    Delay,
    EmptyChoices,
    FakeOpenAIServer,
    HttpError,
    MalformedJson,
    RawStream,
    Reply,
    StreamCut,
    cite_first_evidence,
)
from tests.unit.synthesis.fakes import scored

API_KEY = "sk-test-9f3c1e7b2a4d"
MODEL = "fake-legal-7b"


def settings(base_url: str, **overrides: object) -> OpenAISettings:
    values: dict[str, object] = {
        "base_url": base_url,
        "model": MODEL,
        "api_key": API_KEY,
        "timeout_s": 2.0,
        "max_tokens": 256,
        "seed": 7,
    }
    values.update(overrides)
    return OpenAISettings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def generator(fake_llm: FakeOpenAIServer) -> AsyncIterator[OpenAIGenerator]:
    gen = OpenAIGenerator(settings(fake_llm.base_url))
    yield gen
    await gen.aclose()


@pytest.fixture
def cheating(ipc: Mapping[str, Chunk]) -> GenerationRequest:
    return GenerationRequest(
        question="What is the punishment for cheating under section 420?",
        evidence=scored(ipc, "IPC_420_0", "IPC_415_0"),
        intent=Intent.PUNISHMENT,
    )


# Usage blocks that are not counts: nulls, more than int32, negative, not an object.
BAD_USAGE = [
    '{"prompt_tokens": null, "completion_tokens": null, "total_tokens": null}',
    '{"prompt_tokens": 3000000000, "completion_tokens": 5, "total_tokens": 3000000005}',
    '{"prompt_tokens": -1, "completion_tokens": 5, "total_tokens": 4}',
    '"lots"',
]


class TestOpenAIGenerator:
    async def test_generate_returns_the_model_answer_with_usage(
        self,
        fake_llm: FakeOpenAIServer,
        generator: OpenAIGenerator,
        cheating: GenerationRequest,
    ) -> None:
        fake_llm.script(Reply(cite_first_evidence))

        result = await generator.generate(cheating, timeout_s=5.0)

        assert result.text.endswith("liable to fine [IPC_420_0].")
        assert (result.generator, result.model) == ("openai", MODEL)
        assert result.usage is not None and result.usage.total_tokens > 0

    @pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
    async def test_generate_reports_the_model_the_endpoint_names(
        self, fake_llm: FakeOpenAIServer, cheating: GenerationRequest, stream: bool
    ) -> None:
        # OpenAI answers a request for "gpt-4o-mini" with a dated snapshot name.
        fake_llm.script(Reply(cite_first_evidence, model="fake-legal-7b-2026-01-15"))
        gen = OpenAIGenerator(settings(fake_llm.base_url, stream=stream))

        try:
            result = await gen.generate(cheating, timeout_s=5.0)
        finally:
            await gen.aclose()

        assert result.model == "fake-legal-7b-2026-01-15"
        assert fake_llm.requests[0].body["model"] == MODEL

    async def test_generate_sends_temperature_zero_model_seed_and_key(
        self,
        fake_llm: FakeOpenAIServer,
        generator: OpenAIGenerator,
        cheating: GenerationRequest,
    ) -> None:
        fake_llm.script(Reply(cite_first_evidence))

        await generator.generate(cheating, timeout_s=5.0)

        (sent,) = fake_llm.requests
        assert sent.path == "/v1/chat/completions"
        assert sent.body["temperature"] == 0
        assert sent.body["model"] == MODEL
        assert sent.body["seed"] == 7
        assert sent.body["max_tokens"] == 256
        assert sent.headers["authorization"] == f"Bearer {API_KEY}"
        assert [m["role"] for m in sent.messages] == ["system", "user"]
        assert 'id="IPC_420_0"' in sent.messages[-1]["content"]

    async def test_generate_tells_the_model_what_a_comparison_compares(
        self,
        fake_llm: FakeOpenAIServer,
        generator: OpenAIGenerator,
        ipc: Mapping[str, Chunk],
    ) -> None:
        fake_llm.script(Reply(cite_first_evidence))
        request = GenerationRequest(
            question="What is the difference between theft and extortion?",
            evidence=scored(ipc, "IPC_378_0", "IPC_383_0"),
            intent=Intent.DEFINITION,
            compared=("theft", "extortion"),
        )

        await generator.generate(request, timeout_s=5.0)

        (sent,) = fake_llm.requests
        assert (
            "compares: <term>theft</term>; <term>extortion</term>" in sent.messages[-1]["content"]
        )

    async def test_generate_streams_when_configured(
        self, fake_llm: FakeOpenAIServer, cheating: GenerationRequest
    ) -> None:
        fake_llm.script(Reply(cite_first_evidence))
        gen = OpenAIGenerator(settings(fake_llm.base_url, stream=True))

        try:
            result = await gen.generate(cheating, timeout_s=5.0)
        finally:
            await gen.aclose()

        assert result.text.endswith("[IPC_420_0].")
        assert fake_llm.requests[0].body["stream"] is True

    @pytest.mark.parametrize(
        ("behaviour", "failure"),
        [
            (HttpError(500), GenerationFailure.LLM_HTTP_ERROR),
            (HttpError(429, "rate limited"), GenerationFailure.LLM_HTTP_ERROR),
            (Delay(5.0), GenerationFailure.LLM_TIMEOUT),
            (MalformedJson(), GenerationFailure.LLM_MALFORMED_OUTPUT),
            (EmptyChoices(), GenerationFailure.LLM_MALFORMED_OUTPUT),
            (Reply("   "), GenerationFailure.LLM_MALFORMED_OUTPUT),
            (
                Reply("Whoever cheats shall", finish_reason="length"),
                GenerationFailure.LLM_TRUNCATED,
            ),
        ],
    )
    async def test_generate_maps_endpoint_failures_to_reason_codes(
        self,
        fake_llm: FakeOpenAIServer,
        cheating: GenerationRequest,
        behaviour: Behaviour,
        failure: GenerationFailure,
    ) -> None:
        fake_llm.script(behaviour)
        gen = OpenAIGenerator(settings(fake_llm.base_url))
        # Only the case that must time out gets a short budget: a short one for every case
        # lets a slow first request (lazy imports on a busy machine) time out instead.
        budget_s = 0.2 if isinstance(behaviour, Delay) else 5.0

        try:
            with pytest.raises(GenerationError) as caught:
                await gen.generate(cheating, timeout_s=budget_s)
        finally:
            await gen.aclose()

        assert caught.value.failure is failure
        assert len(fake_llm.requests) == 1  # no silent retry

    @pytest.mark.parametrize(
        ("body", "detail"),
        [
            ('{"id": "x", "choices": "oops"}', "response has no choices"),
            (
                '{"id": "x", "choices": [{"index": 0, "finish_reason": "stop", '
                '"message": {"role": "assistant", "content": 42}}]}',
                "message.content is a int, not text",
            ),
        ],
        ids=["choices-not-a-list", "content-not-text"],
    )
    async def test_fields_of_the_wrong_type_are_malformed_output_not_a_crash(
        self,
        fake_llm: FakeOpenAIServer,
        generator: OpenAIGenerator,
        cheating: GenerationRequest,
        body: str,
        detail: str,
    ) -> None:
        """Found by a new user: these gave INTERNAL (AttributeError) instead of a refusal."""
        fake_llm.script(MalformedJson(body))
        with pytest.raises(GenerationError) as caught:
            await generator.generate(cheating, timeout_s=5.0)
        assert caught.value.failure is GenerationFailure.LLM_MALFORMED_OUTPUT
        assert detail in caught.value.message

    @pytest.mark.parametrize(
        "usage",
        BAD_USAGE,
    )
    async def test_a_usage_block_that_is_not_counts_is_dropped_not_fatal(
        self,
        fake_llm: FakeOpenAIServer,
        generator: OpenAIGenerator,
        cheating: GenerationRequest,
        usage: str,
    ) -> None:
        """Found by a new user: these turned a validated answer into INTERNAL."""
        fake_llm.script(
            MalformedJson(
                '{"id": "x", "model": "m", "choices": [{"index": 0, "finish_reason": "stop", '
                '"message": {"role": "assistant", "content": "Whoever cheats [IPC_420_0]."}}], '
                f'"usage": {usage}}}'
            )
        )
        result = await generator.generate(cheating, timeout_s=5.0)
        assert result.text == "Whoever cheats [IPC_420_0]."
        assert result.usage is None

    async def test_a_draft_longer_than_the_validator_reads_is_refused_here(
        self, fake_llm: FakeOpenAIServer, generator: OpenAIGenerator, cheating: GenerationRequest
    ) -> None:
        """Found by a new user: a 67 KB draft reached the validator, whose INVALID_ARGUMENT
        came back as UNAVAILABLE blaming it."""
        fake_llm.script(Reply("Whoever cheats [IPC_420_0]. " * 2500))
        with pytest.raises(GenerationError) as caught:
            await generator.generate(cheating, timeout_s=5.0)
        assert caught.value.failure is GenerationFailure.LLM_MALFORMED_OUTPUT
        assert "more than the validator reads (65,536)" in caught.value.message

    async def test_generate_reports_a_stream_cut_mid_answer(
        self, fake_llm: FakeOpenAIServer, cheating: GenerationRequest
    ) -> None:
        fake_llm.script(StreamCut(cite_first_evidence, after_chars=40))
        gen = OpenAIGenerator(settings(fake_llm.base_url, stream=True))

        try:
            with pytest.raises(GenerationError) as caught:
                await gen.generate(cheating, timeout_s=5.0)
        finally:
            await gen.aclose()

        assert caught.value.failure is GenerationFailure.LLM_STREAM_INTERRUPTED

    async def test_generate_reports_an_unreachable_endpoint(
        self, cheating: GenerationRequest
    ) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]  # bound but not listening: connection refused
            gen = OpenAIGenerator(settings(f"http://user:pw@127.0.0.1:{port}/v1"))
            try:
                with pytest.raises(GenerationError) as caught:
                    await gen.generate(cheating, timeout_s=5.0)
            finally:
                await gen.aclose()

        assert caught.value.failure is GenerationFailure.LLM_UNREACHABLE
        # Why (the client said only "Connection error."); where is the log's (below).
        assert caught.value.message.startswith("cannot reach the LLM endpoint: ConnectError: ")
        assert "pw" not in caught.value.message

    async def test_an_unreachable_endpoint_is_named_in_the_log_not_to_the_caller(
        self, cheating: GenerationRequest, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Found by a security audit: the refusal said "cannot reach http://<internal host>/v1"
        to the caller, and a credential in the base URL's query string with it."""
        caplog.set_level(logging.WARNING, logger="services.synthesis.openai_generator")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
            base_url = f"http://user:pw-9f3c@127.0.0.1:{port}/v1?api-key=QS-SECRET-77&x=1"
            gen = OpenAIGenerator(settings(base_url))
            try:
                with pytest.raises(GenerationError) as caught:
                    await gen.generate(cheating, timeout_s=5.0)
            finally:
                await gen.aclose()

        message = caught.value.message
        assert message.startswith("cannot reach the LLM endpoint: ConnectError: ")
        assert "127.0.0.1" not in message and str(port) not in message
        assert f"cannot reach http://127.0.0.1:{port}/v1: ConnectError: " in caplog.text
        for secret in ("QS-SECRET-77", "api-key", "pw-9f3c"):
            assert secret not in message and secret not in caplog.text
            assert secret not in repr(gen)

    async def test_the_cause_of_a_failed_connection_loses_the_endpoints_name(
        self, cheating: GenerationRequest, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The cause's own words may name the host (a TLS name mismatch) or an address (a
        proxy): the caller gets them without it."""
        caplog.set_level(logging.WARNING, logger="services.synthesis.openai_generator")
        cause = ConnectionError(
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate is not valid for "
            "'llm-gw.corp.internal'; via proxy 10.12.0.7:3128"
        )
        gen = OpenAIGenerator(
            settings("https://llm-gw.corp.internal:8443/v1"), client=_Failing(cause)
        )

        with pytest.raises(GenerationError) as caught:
            await gen.generate(cheating, timeout_s=5.0)

        assert caught.value.failure is GenerationFailure.LLM_UNREACHABLE
        assert caught.value.message == (
            "cannot reach the LLM endpoint: ConnectionError: [SSL: CERTIFICATE_VERIFY_FAILED] "
            "certificate is not valid for '<address>'; via proxy <address>"
        )
        assert "cannot reach https://llm-gw.corp.internal:8443/v1: " in caplog.text

    @pytest.mark.parametrize(
        ("behaviour", "said"),
        [
            (
                # A proxy's plain-text body: internal addresses, paths, a traceback.
                HttpError(
                    500,
                    raw="upstream connect error to 10.12.0.7:8000 /opt/vllm/worker.py line 88 "
                    "Traceback (most recent call last): ...",
                ),
                "HTTP 500 Internal Server Error",
            ),
            (
                HttpError(
                    429, "Rate limit reached for o1 in org-abc123", code="rate_limit_exceeded"
                ),
                "HTTP 429 Too Many Requests (rate_limit_exceeded)",
            ),
            (
                HttpError(404, "The model `x` does not exist", type="invalid_request_error"),
                "HTTP 404 Not Found (invalid_request_error)",
            ),
            # A code that is not a word (vLLM sends the status again) is not repeated.
            (
                HttpError(400, "bad", code="400", type="Bad Request: see /srv"),
                "HTTP 400 Bad Request",
            ),
            (HttpError(529, "overloaded", type="overloaded_error"), "HTTP 529 (overloaded_error)"),
        ],
        ids=["proxy-text", "rate-limit", "not-found", "numeric-code", "unknown-status"],
    )
    async def test_an_http_error_tells_the_caller_its_status_and_the_log_its_body(
        self,
        fake_llm: FakeOpenAIServer,
        generator: OpenAIGenerator,
        cheating: GenerationRequest,
        caplog: pytest.LogCaptureFixture,
        behaviour: HttpError,
        said: str,
    ) -> None:
        """Found by a security audit: the endpoint's body reached the caller as written."""
        caplog.set_level(logging.WARNING, logger="services.synthesis.openai_generator")
        fake_llm.script(behaviour)

        with pytest.raises(GenerationError) as caught:
            await generator.generate(cheating, timeout_s=5.0)

        assert caught.value.failure is GenerationFailure.LLM_HTTP_ERROR
        assert caught.value.message == said
        body = behaviour.raw if behaviour.raw is not None else behaviour.message
        assert body in caplog.text and fake_llm.base_url in caplog.text

    async def test_the_callers_request_id_reaches_the_endpoint(
        self, fake_llm: FakeOpenAIServer, generator: OpenAIGenerator, cheating: GenerationRequest
    ) -> None:
        fake_llm.script(Reply(cite_first_evidence))
        token = request_id_var.set("req-abc-123")
        try:
            await generator.generate(cheating, timeout_s=5.0)
        finally:
            request_id_var.reset(token)
        assert fake_llm.requests[-1].headers["x-request-id"] == "req-abc-123"

    async def test_generate_uses_the_smaller_of_call_and_configured_timeout(
        self, fake_llm: FakeOpenAIServer, generator: OpenAIGenerator, cheating: GenerationRequest
    ) -> None:
        fake_llm.script(Delay(5.0))

        with pytest.raises(GenerationError) as caught:
            await generator.generate(cheating, timeout_s=0.1)

        assert caught.value.failure is GenerationFailure.LLM_TIMEOUT


class _Failing:
    """An ``AsyncOpenAI`` stand-in whose every completion fails to connect, with ``cause``."""

    def __init__(self, cause: Exception) -> None:
        self.chat = self
        self.completions = self
        self._cause = cause

    async def create(self, **_: object) -> None:
        # The error keeps the request only for its reader; the generator never reads it.
        raise openai.APIConnectionError(request=None) from self._cause  # type: ignore[arg-type]

    async def close(self) -> None:
        pass


def _chunk(choices: str, usage: str = "null") -> str:
    """One chat.completion.chunk as JSON text, ``choices`` and ``usage`` as written."""
    return (
        '{"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m", '
        f'"choices": {choices}, "usage": {usage}}}'
    )


class TestStreamedUsage:
    """OpenAI reports token usage in a stream only when the request asks for it
    (``stream_options.include_usage``), in a last chunk whose ``choices`` is empty."""

    @pytest.mark.parametrize("incremental", [False, True], ids=["generate", "incrementally"])
    async def test_a_streamed_answer_reports_its_token_usage(
        self, fake_llm: FakeOpenAIServer, cheating: GenerationRequest, incremental: bool
    ) -> None:
        """Streamed requests used not to ask, so with SYNTHESIS_OPENAI_STREAM=true (and on
        StreamAnswer) no answer reported its usage."""
        fake_llm.script(Reply(cite_first_evidence, model="fake-legal-7b-2026-01-15"))
        # generate_incrementally (StreamAnswer's path) streams whatever settings.stream says.
        gen = OpenAIGenerator(settings(fake_llm.base_url, stream=not incremental))
        deltas: list[str] = []
        try:
            if incremental:
                result = await gen.generate_incrementally(
                    cheating, timeout_s=5.0, on_text=deltas.append
                )
            else:
                result = await gen.generate(cheating, timeout_s=5.0)
        finally:
            await gen.aclose()

        (sent,) = fake_llm.requests
        assert sent.body["stream"] is True
        assert sent.body["stream_options"] == {"include_usage": True}
        # The fake counts a token a word.
        prompt = sum(len(str(m["content"]).split()) for m in sent.messages)
        completion = len(result.text.split())
        assert result.usage == TokenUsage(prompt, completion, prompt + completion)
        assert (result.finish_reason, result.model) == ("stop", "fake-legal-7b-2026-01-15")
        assert result.text.endswith("liable to fine [IPC_420_0].")
        assert not incremental or "".join(deltas).strip() == result.text

    async def test_with_stream_usage_off_no_usage_is_asked_for(
        self, fake_llm: FakeOpenAIServer, cheating: GenerationRequest
    ) -> None:
        """SYNTHESIS_OPENAI_STREAM_USAGE=false, for servers that answer the field with 400."""
        fake_llm.script(Reply(cite_first_evidence))
        gen = OpenAIGenerator(settings(fake_llm.base_url, stream=True, stream_usage=False))
        try:
            result = await gen.generate(cheating, timeout_s=5.0)
        finally:
            await gen.aclose()

        (sent,) = fake_llm.requests
        assert sent.body["stream"] is True and "stream_options" not in sent.body
        assert result.text.endswith("liable to fine [IPC_420_0].")
        assert result.usage is None

    async def test_a_server_that_ignores_the_request_for_usage_still_answers(
        self, fake_llm: FakeOpenAIServer, cheating: GenerationRequest
    ) -> None:
        fake_llm.script(Reply(cite_first_evidence, with_usage=False))
        gen = OpenAIGenerator(settings(fake_llm.base_url, stream=True))
        try:
            result = await gen.generate(cheating, timeout_s=5.0)
        finally:
            await gen.aclose()

        assert fake_llm.requests[0].body["stream_options"] == {"include_usage": True}
        assert result.text.endswith("liable to fine [IPC_420_0].")
        assert result.usage is None

    @pytest.mark.parametrize(
        "usage",
        BAD_USAGE,
    )
    async def test_a_usage_chunk_that_is_not_counts_still_delivers_the_answer(
        self,
        fake_llm: FakeOpenAIServer,
        cheating: GenerationRequest,
        caplog: pytest.LogCaptureFixture,
        usage: str,
    ) -> None:
        delta = '[{"index": 0, "delta": {"content": "%s"}, "finish_reason": %s}]'
        fake_llm.script(
            RawStream(
                (
                    _chunk(delta % ("Whoever cheats ", "null")),
                    _chunk(delta % ("[IPC_420_0].", '"stop"')),
                    _chunk("[]", usage),
                )
            )
        )
        gen = OpenAIGenerator(settings(fake_llm.base_url, stream=True))
        try:
            with caplog.at_level(logging.WARNING, logger="services.synthesis.openai_generator"):
                result = await gen.generate(cheating, timeout_s=5.0)
        finally:
            await gen.aclose()

        assert (result.text, result.finish_reason) == ("Whoever cheats [IPC_420_0].", "stop")
        assert result.usage is None
        assert any("token usage dropped" in r.getMessage() for r in caplog.records)

    def test_the_fake_endpoint_sends_usage_as_openai_does(self, fake_llm: FakeOpenAIServer) -> None:
        """What the tests above rely on: every chunk has a null usage and one more chunk, with
        no choices, reports it after the finish reason; none of it unless asked."""
        fake_llm.script(Reply("Whoever cheats [IPC_420_0]."))
        request = {"model": MODEL, "messages": [{"role": "user", "content": "two words"}]}

        def chunks(**extra: object) -> list[dict[str, Any]]:
            body = json.dumps({**request, "stream": True, **extra}).encode()
            sent = urllib.request.Request(
                f"{fake_llm.base_url}/chat/completions",
                data=body,
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(sent, timeout=5) as answer:
                lines = [
                    line.removeprefix("data: ") for line in answer.read().decode().split("\n\n")
                ]
            events = [line for line in lines if line]
            assert events[-1] == "[DONE]"
            return [json.loads(event) for event in events[:-1]]

        *text, finished, last = chunks(stream_options={"include_usage": True})
        assert all(c["usage"] is None for c in [*text, finished])
        assert [c["choices"][0]["finish_reason"] for c in [*text, finished]][-2:] == [None, "stop"]
        assert last["choices"] == []
        assert last["usage"] == {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}

        plain = chunks()
        assert plain and all("usage" not in c and c["choices"] for c in plain)


_WARM_UP_PROBE = textwrap.dedent(
    """
    import asyncio, json, sys
    from services.synthesis.openai_generator import OpenAIGenerator, OpenAISettings

    LAZY = ("openai.resources.chat.completions.completions", "anyio._backends._asyncio")

    async def main():
        gen = OpenAIGenerator(OpenAISettings(base_url=sys.argv[1], model="m"))
        before = [name in sys.modules for name in LAZY]
        await gen.warm_up()
        after = [name in sys.modules for name in LAZY]
        await gen.aclose()
        print(json.dumps({"before": before, "after": after}))

    asyncio.run(main())
    """
)


class TestWarmUp:
    def test_warm_up_loads_the_lazy_imports_without_a_request(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        # A fresh interpreter: in this one earlier tests have long imported everything.
        probe = subprocess.run(
            [sys.executable, "-c", _WARM_UP_PROBE, fake_llm.base_url],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )

        loaded = json.loads(probe.stdout)
        assert loaded == {"before": [False, False], "after": [True, True]}
        assert fake_llm.requests == []


class TestSecretHygiene:
    async def test_api_key_never_reaches_logs_errors_or_repr(
        self,
        fake_llm: FakeOpenAIServer,
        cheating: GenerationRequest,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        caplog.set_level(logging.DEBUG)
        # The endpoint echoes the key in its error body, as some proxies do.
        fake_llm.script(HttpError(401, f"invalid api key {API_KEY}"), Delay(5.0), MalformedJson())
        config = settings(fake_llm.base_url)
        gen = OpenAIGenerator(config)
        errors: list[GenerationError] = []
        try:
            for budget_s in (5.0, 0.2, 5.0):  # the 401 and the bad JSON must not time out
                with pytest.raises(GenerationError) as caught:
                    await gen.generate(cheating, timeout_s=budget_s)
                errors.append(caught.value)
        finally:
            await gen.aclose()

        assert fake_llm.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
        assert [e.failure for e in errors] == [
            GenerationFailure.LLM_HTTP_ERROR,
            GenerationFailure.LLM_TIMEOUT,
            GenerationFailure.LLM_MALFORMED_OUTPUT,
        ]
        # The body stays in the log (the caller gets the status alone), the key redacted.
        assert str(errors[0]) == "LLM_HTTP_ERROR: HTTP 401 Unauthorized (server_error)"
        assert "invalid api key [REDACTED]" in caplog.text
        for error in errors:
            assert API_KEY not in str(error)
            assert error.__cause__ is None and error.__suppress_context__
        assert API_KEY not in caplog.text
        assert API_KEY not in repr(gen)
        assert API_KEY not in repr(config)

    def test_settings_reject_missing_endpoint(self) -> None:
        with pytest.raises(ValueError, match="base_url and model"):
            OpenAISettings(base_url="", model=MODEL)

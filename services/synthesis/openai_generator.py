"""Generator for OpenAI-compatible endpoints (OpenAI, vLLM, llama.cpp, Ollama); imports openai."""

from __future__ import annotations

import asyncio
import http
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import anyio.lowlevel
import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from services.common.evidence import MAX_ANSWER_BYTES
from services.common.logs import request_id_var
from services.common.urls import ADDRESS, display_url, split_url, whole_names, without_addresses
from services.synthesis.generation import (
    GenerationError,
    GenerationFailure,
    GenerationRequest,
    GenerationResult,
    TextSink,
    TokenUsage,
)
from services.synthesis.prompt import Prompt, build_prompt

logger = logging.getLogger(__name__)

_MAX_ERROR_DETAIL = 200
# What the server log keeps of a failure the caller sees briefly (an endpoint's error body).
_MAX_LOGGED_DETAIL = 2_000


@dataclass(frozen=True, slots=True)
class OpenAISettings:
    """Endpoint and sampling settings; temperature is always 0 (not configurable on purpose).

    ``api_key`` is excluded from ``repr``; use a placeholder such as ``"none"`` for local
    servers that ignore it. ``seed`` None sends no seed (some servers reject the field).
    ``stream_usage`` asks a stream for its token counts (``stream_options.include_usage``,
    which OpenAI answers with a last chunk that has no choices); False for a server that
    rejects the field (some older OpenAI-compatible servers and proxies answer it with 400).
    """

    base_url: str
    model: str
    api_key: str = field(default="none", repr=False)
    timeout_s: float = 30.0
    max_tokens: int = 512
    seed: int | None = 0
    stream: bool = False
    stream_usage: bool = True
    max_history_turns: int = 4

    def __post_init__(self) -> None:
        if not self.base_url or not self.model:
            raise ValueError("base_url and model are required")
        if self.timeout_s <= 0 or self.max_tokens <= 0:
            raise ValueError("timeout_s and max_tokens must be positive")


class OpenAIGenerator:
    """Drafts answers with ``chat.completions`` at temperature 0, no retries, bounded time.

    Every failure becomes ``GenerationError`` with a reason code and a message that never
    contains the API key (messages are redacted and the library exception is not chained,
    because its request object carries the ``Authorization`` header). The message reaches the
    caller (``refusal_reason``), so it names neither the endpoint (host, port, credentials in
    the URL's userinfo or query string) nor what the endpoint said beyond its status and error
    code; the server log has those, with the credentials redacted.
    """

    def __init__(
        self, settings: OpenAISettings, *, client: openai.AsyncOpenAI | None = None
    ) -> None:
        self._settings = settings
        self._secrets = _url_secrets(settings.base_url, settings.api_key)
        self._endpoint = display_url(settings.base_url)
        self._endpoint_names = _url_names(settings.base_url)
        self._client = client or openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key,
            timeout=settings.timeout_s,
            max_retries=0,
        )

    def __repr__(self) -> str:
        s, where = self._settings, self._endpoint
        return f"OpenAIGenerator(base_url={where!r}, model={s.model!r}, stream={s.stream})"

    @property
    def name(self) -> str:
        """The generator's name in requests and results."""
        return "openai"

    @property
    def model(self) -> str:
        """The model name sent to the endpoint."""
        return self._settings.model

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    async def warm_up(self) -> None:
        """Load what the client imports lazily on its first request; sends nothing.

        openai resolves ``client.chat`` on first use (about 100 ms of imports) and httpx loads
        anyio's asyncio backend on its first request, all inside the first call's time budget:
        on a busy machine a short ``timeout_s`` expired before the request was even sent.
        """
        _ = self._client.chat.completions
        await anyio.lowlevel.checkpoint()

    def prompt_for(self, request: GenerationRequest) -> Prompt:
        """The prompt this generator sends for ``request``."""
        return build_prompt(
            request.question,
            [scored.chunk for scored in request.evidence],
            history=request.history,
            max_history_turns=self._settings.max_history_turns,
            synthesis_mode=request.synthesis_mode,
            compared=request.compared,
        )

    async def generate(self, request: GenerationRequest, *, timeout_s: float) -> GenerationResult:
        """One completion within ``min(timeout_s, settings.timeout_s)``; no retry."""
        return await self._complete(request, timeout_s, None)

    async def generate_incrementally(
        self, request: GenerationRequest, *, timeout_s: float, on_text: TextSink
    ) -> GenerationResult:
        """``generate`` over the endpoint's SSE stream (whatever ``settings.stream`` says),
        handing each content delta to ``on_text`` as it arrives."""
        return await self._complete(request, timeout_s, on_text)

    async def _complete(
        self, request: GenerationRequest, timeout_s: float, on_text: TextSink | None
    ) -> GenerationResult:
        timeout = min(timeout_s, self._settings.timeout_s)
        if timeout <= 0:
            raise GenerationError(GenerationFailure.LLM_TIMEOUT, "no time left for generation")
        messages: list[ChatCompletionMessageParam] = [
            {"role": m.role, "content": m.content}  # type: ignore[misc]
            for m in self.prompt_for(request).messages
        ]
        try:
            # The client timeout bounds each read; this bounds the whole call, streams included.
            async with asyncio.timeout(timeout):
                if self._settings.stream or on_text is not None:
                    return await self._streamed(messages, timeout, on_text)
                return await self._single(messages, timeout)
        except GenerationError:
            raise
        # `from None`: the library's exception holds the request, Authorization header included.
        except (TimeoutError, openai.APITimeoutError):
            timed_out = f"no answer within {timeout:.2f}s"
            raise self._fail(GenerationFailure.LLM_TIMEOUT, timed_out) from None
        except openai.APIStatusError as exc:
            # The caller gets the status and the error's code; the body (a proxy's may hold
            # internal addresses, paths, a traceback) goes to the log.
            status = _status_text(exc)
            logged = f"{status} from {self._endpoint}; the endpoint said: {_body_text(exc)}"
            raise self._fail(GenerationFailure.LLM_HTTP_ERROR, status, logged=logged) from None
        except openai.APIConnectionError as exc:
            # The client says only "Connection error."; its cause says what failed (the caller
            # gets that), and the log says where.
            cause = exc.__cause__ or exc
            failed = f"{type(cause).__name__}: {cause}"
            logged = f"cannot reach {self._endpoint}: {failed}"
            unreachable = f"cannot reach the LLM endpoint: {self._unnamed(failed)}"
            raise self._fail(
                GenerationFailure.LLM_UNREACHABLE, unreachable, logged=logged
            ) from None
        except (openai.OpenAIError, ValueError) as exc:
            # JSON that does not parse (ValueError) or a body that fails response validation.
            malformed = type(exc).__name__
            raise self._fail(GenerationFailure.LLM_MALFORMED_OUTPUT, malformed) from None

    def _base_args(self, messages: list[ChatCompletionMessageParam], budget_s: float) -> Any:
        args: dict[str, Any] = {
            "model": self._settings.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": self._settings.max_tokens,
            "timeout": budget_s,
        }
        if self._settings.seed is not None:
            args["seed"] = self._settings.seed
        request_id = request_id_var.get()
        if request_id:  # the caller's id reaches the endpoint's logs too
            args["extra_headers"] = {"X-Request-Id": request_id}
        return args

    async def _single(
        self, messages: list[ChatCompletionMessageParam], budget_s: float
    ) -> GenerationResult:
        completion: ChatCompletion = await self._client.chat.completions.create(
            **self._base_args(messages, budget_s)
        )
        # The client builds its models without validating them: any field may hold any JSON.
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise self._fail(GenerationFailure.LLM_MALFORMED_OUTPUT, "response has no choices")
        choice = choices[0]
        content = getattr(getattr(choice, "message", None), "content", None)
        return self._result(
            self._text(content, "message.content"),
            self._text(getattr(choice, "finish_reason", None), "finish_reason"),
            _usage(getattr(completion, "usage", None)),
            self._text(getattr(completion, "model", ""), "model"),
        )

    def _text(self, value: object, field: str) -> str | None:
        """A field the endpoint should send as text (or leave out), else malformed output."""
        if value is None or isinstance(value, str):
            return value
        raise self._fail(
            GenerationFailure.LLM_MALFORMED_OUTPUT, f"{field} is a {type(value).__name__}, not text"
        )

    async def _streamed(
        self,
        messages: list[ChatCompletionMessageParam],
        budget_s: float,
        on_text: TextSink | None = None,
    ) -> GenerationResult:
        args = self._base_args(messages, budget_s)
        if self._settings.stream_usage:
            # Without it OpenAI sends no usage in a stream; with it, a last chunk carries it.
            args["stream_options"] = {"include_usage": True}
        stream = await self._client.chat.completions.create(**args, stream=True)
        parts: list[str] = []
        finish_reason: str | None = None
        usage: TokenUsage | None = None
        model = ""
        try:
            async for chunk in stream:
                model = model or self._text(getattr(chunk, "model", ""), "model") or ""
                usage = _usage(getattr(chunk, "usage", None)) or usage
                choices = getattr(chunk, "choices", None)
                if not isinstance(choices, list) or not choices:
                    # No text: the last chunk of a stream that asked for usage (it follows
                    # the one with the finish reason), or Azure's prompt-filter chunk first.
                    continue
                choice = choices[0]
                delta = self._text(
                    getattr(getattr(choice, "delta", None), "content", None), "delta.content"
                )
                if delta:
                    parts.append(delta)
                    if on_text is not None:
                        on_text(delta)
                ended = self._text(getattr(choice, "finish_reason", None), "finish_reason")
                if ended is not None:
                    finish_reason = ended
        except openai.APIConnectionError as exc:
            if isinstance(exc, openai.APITimeoutError):
                raise
            broke = f"stream broke after {sum(map(len, parts))} characters"
            raise self._fail(GenerationFailure.LLM_STREAM_INTERRUPTED, broke) from None
        if finish_reason is None:
            raise self._fail(
                GenerationFailure.LLM_STREAM_INTERRUPTED, "stream ended without a finish reason"
            )
        return self._result("".join(parts), finish_reason, usage, model)

    def _result(
        self,
        content: str | None,
        finish_reason: str | None,
        usage: TokenUsage | None,
        reported_model: str | None,
    ) -> GenerationResult:
        """The draft; ``model`` is the name the endpoint reported (OpenAI answers "gpt-4o-mini"
        with a dated snapshot name), falling back to the requested one when it reported none."""
        if finish_reason == "length":
            # A draft cut at max_tokens ends mid-sentence; refusing beats delivering half a rule.
            raise self._fail(GenerationFailure.LLM_TRUNCATED, "answer hit max_tokens")
        if finish_reason in ("content_filter", "tool_calls", "function_call"):
            raise self._fail(
                GenerationFailure.LLM_MALFORMED_OUTPUT, f"finish_reason {finish_reason!r}"
            )
        if content is None or not content.strip():
            raise self._fail(GenerationFailure.LLM_MALFORMED_OUTPUT, "empty answer")
        size = len(content.strip().encode())
        if size > MAX_ANSWER_BYTES:
            # The validator reads no more: refused here, as the draft's fault, rather than
            # reported as the validator's (it would answer INVALID_ARGUMENT).
            raise self._fail(
                GenerationFailure.LLM_MALFORMED_OUTPUT,
                f"a draft of {size:,} bytes, more than the validator reads ({MAX_ANSWER_BYTES:,})",
            )
        return GenerationResult(
            text=content.strip(),
            generator=self.name,
            model=reported_model or self._settings.model,
            usage=usage,
            finish_reason=finish_reason or "stop",
        )

    def _fail(
        self, failure: GenerationFailure, detail: str, *, logged: str | None = None
    ) -> GenerationError:
        """The error whose message (``detail``) the caller sees; the log line says ``logged``
        in its place when the operator needs more (where, and what the endpoint said)."""
        message = self._redact(detail)[:_MAX_ERROR_DETAIL]
        said = message if logged is None else self._redact(logged)[:_MAX_LOGGED_DETAIL]
        logger.warning("generation failed: %s: %s", failure.value, said)
        return GenerationError(failure, message)

    def _redact(self, text: str) -> str:
        """``text`` with the API key and the base URL's credentials (userinfo, query string)
        written [REDACTED]."""
        for secret in self._secrets:
            text = text.replace(secret, "[REDACTED]")
        return text

    def _unnamed(self, text: str) -> str:
        """``text`` (an HTTP library's words) without the endpoint's URL, host or any IP
        address, each written <address>: the caller has no use for them."""
        text = self._redact(text)
        if self._endpoint_names is not None:
            text = self._endpoint_names.sub(ADDRESS, text)
        return without_addresses(text)


# The most tokens a usage field may report (the proto's int32 TokenUsage fields, for the total
# too); beyond that, or not a count at all, the endpoint's usage block is not believed.
_MAX_TOKENS_REPORTED = (2**31 - 1) // 2


def _usage(reported: object) -> TokenUsage | None:
    """The endpoint's token counts when they are counts; None (logged) when they are missing,
    negative, too large or not integers: a bad usage block never costs a validated answer."""
    if reported is None:
        return None
    counts = [getattr(reported, name, None) for name in ("prompt_tokens", "completion_tokens")]
    total = getattr(reported, "total_tokens", None)

    def count(value: object) -> bool:
        return type(value) is int and 0 <= value <= _MAX_TOKENS_REPORTED

    if not all(count(c) for c in counts) or not (total is None or count(total)):
        logger.warning("token usage dropped: the endpoint reported %r", reported)
        return None
    prompt, completion = counts
    assert isinstance(prompt, int) and isinstance(completion, int)
    return TokenUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total if isinstance(total, int) and total else prompt + completion,
    )


_STATUS_PREFIX = re.compile(r"^Error code: \d+(?: - )?")
# An error code or type an endpoint sends in its JSON error ("rate_limit_exceeded",
# "model_not_found", vLLM's "BadRequestError"): a word, shown to the caller; anything else
# (free text, a number) is left to the log.
_ERROR_CODE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
# The shortest credential redacted (shorter ones would redact ordinary words).
_MIN_SECRET_CHARS = 4


def _status_text(exc: openai.APIStatusError) -> str:
    """What the caller learns of an HTTP error: the status, its standard phrase, and the
    error's code (or type) when it is a word: "HTTP 429 Too Many Requests (rate_limit_exceeded)"."""
    try:
        phrase = f" {http.HTTPStatus(exc.status_code).phrase}"
    except ValueError:
        phrase = ""
    codes = [c for c in (exc.code, exc.type) if isinstance(c, str) and _ERROR_CODE.fullmatch(c)]
    code = f" ({codes[0]})" if codes else ""
    return f"HTTP {exc.status_code}{phrase}{code}"


def _body_text(exc: openai.APIStatusError) -> str:
    """The endpoint's error body as it sent it (its JSON error object, or its text), for the
    log; the client's message repeats the status ("Error code: 429 - ...")."""
    body = exc.body
    if isinstance(body, str):
        return body or "(an empty body)"
    if body is not None:
        try:
            return json.dumps(body, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return repr(body)
    return _STATUS_PREFIX.sub("", exc.message) or "(no body)"


def _url_secrets(url: str, api_key: str) -> tuple[str, ...]:
    """What is redacted wherever it appears: the API key, and the base URL's userinfo, query
    string and fragment, whole and by value; longest first, so that a part never leaves the
    rest of a longer secret behind."""
    found = {api_key}
    parts = split_url(url)
    if parts is not None:
        userinfo = parts.netloc.rsplit("@", 1)[0] if "@" in parts.netloc else ""
        # "user:password" or a key alone ("https://KEY@host"); a user name is no secret.
        key = parts.password if parts.password is not None else parts.username
        found.update((userinfo, key or "", parts.query, parts.fragment))
        found.update(v for _, v in parse_qsl(parts.query, keep_blank_values=True))
    elif "?" in url:
        found.add(url.split("?", 1)[1])
    kept = (s for s in found if len(s) >= _MIN_SECRET_CHARS)
    return tuple(sorted(kept, key=len, reverse=True))


def _url_names(url: str) -> re.Pattern[str] | None:
    """The base URL as written, as logged, and its host (with any port), each a whole word."""
    parts = split_url(url)
    forms = {url, display_url(url)}
    if parts is not None and parts.hostname:
        forms.update((parts.netloc.rsplit("@", 1)[-1], parts.hostname))
    return whole_names(forms)

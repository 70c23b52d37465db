"""The judge over an OpenAI-compatible endpoint: batched, bounded, cached, fail-closed (imports openai)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Sequence
from functools import partial
from typing import Any, TypeVar

import openai

from services.common.config import InvalidSettingError, JudgeSettings
from services.common.judge import (
    Band,
    Item,
    Limits,
    Outcome,
    ProcessBudget,
    PromptStyle,
    ReplyError,
    Task,
    TokenLogprob,
    Verdict,
    answer_scores,
    build_messages,
    cache_key,
    decode_verdict,
    encode_verdict,
    estimate_tokens,
    parse_reply,
    reply_tokens,
)
from services.common.metrics import (
    JUDGE_BUDGET_EXHAUSTED,
    JUDGE_CACHE_EVENTS,
    JUDGE_CALLS,
    JUDGE_ITEMS,
    JUDGE_LATENCY,
    JUDGE_TOKENS,
)
from services.common.redis_store import RedisStore
from services.common.urls import display_url, split_url

logger = logging.getLogger(__name__)

T = TypeVar("T")

_TOP_LOGPROBS = 5


class OpenAIJudge:
    """Asks the judge about items at temperature 0, without retries, within the caller's time.

    One request's items are looked up in the cache, then sent in batches of
    ``items_per_call`` (one chat completion each, run concurrently, at most
    ``max_concurrency`` in flight across the process). Every failure (time-out, HTTP error,
    malformed or ambiguous reply, no time left) makes the batch's items UNAVAILABLE; spent
    budgets make them BUDGET_EXHAUSTED. Nothing here turns a failure into a pass. Error
    messages never carry the API key: library exceptions are reduced to their type and status.
    """

    def __init__(
        self,
        settings: JudgeSettings,
        *,
        client: openai.AsyncOpenAI | None = None,
        cache: RedisStore | None = None,
        budget: ProcessBudget | None = None,
    ) -> None:
        if not settings.enabled or not settings.model:
            raise ValueError("a judge needs base_url and model")
        self._settings = settings
        self._limits = Limits(
            settings.max_items_per_request,
            settings.items_per_call,
            settings.max_tokens_per_request,
        )
        self._client = client or openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key.reveal() or "none",
            timeout=settings.timeout_s,
            max_retries=0,
        )
        self._cache = cache
        self._mac_key = settings.cache_key.reveal().encode()  # b"": entries unsigned
        self._budget = budget or ProcessBudget(
            settings.calls_per_minute, settings.tokens_per_minute, settings.seconds_per_minute
        )
        self._slots = asyncio.Semaphore(settings.max_concurrency)
        self._style = PromptStyle(settings.prompt)
        self._endpoint = endpoint_identity(settings.base_url)

    def __repr__(self) -> str:
        # Logged at start-up ("judge tier on"): no userinfo, query string or fragment, which
        # may carry a credential.
        url = display_url(self._settings.base_url)
        return f"OpenAIJudge(base_url={url!r}, model={self.model!r})"

    @property
    def model(self) -> str:
        return self._settings.model

    @property
    def timeout_s(self) -> float:
        return self._settings.timeout_s

    async def aclose(self) -> None:
        await self._client.close()
        if self._cache is not None:
            self._cache.close()

    async def judge(self, task: Task, items: Sequence[Item], *, timeout_s: float) -> list[Verdict]:
        """A verdict per item, in order, within ``min(timeout_s, settings.timeout_s)``."""
        deadline = time.monotonic() + min(timeout_s, self._settings.timeout_s)
        verdicts: list[Verdict | None] = [None] * len(items)
        if self._style is PromptStyle.DOCUMENT_CLAIM and task is not Task.SUPPORT:
            # A claim checker cannot say whether evidence answers a question (synthesis refuses
            # to start with this setting; this guards any other caller).
            return [self._unavailable("the document-claim prompt judges claims only")] * len(items)
        keys = [self._cache_key(task, item) for item in items]
        if self._cache is not None and items:
            found = await asyncio.to_thread(self._lookup, keys)
            verdicts = list(found)
        pending = [i for i, v in enumerate(verdicts) if v is None]
        for i in pending[self._limits.max_items :]:
            verdicts[i] = self._refused(
                "request",
                f"more than {self._limits.max_items} uncertain items in one request",
            )
        pending = pending[: self._limits.max_items]
        calls = []
        request_tokens = 0
        per_call = 1 if self._style is PromptStyle.DOCUMENT_CLAIM else self._limits.items_per_call
        for batch in (pending[k : k + per_call] for k in range(0, len(pending), per_call)):
            messages = build_messages(task, [items[i] for i in batch], self._style)
            estimate = estimate_tokens(messages, reply_tokens(len(batch)))
            refusal, ticket = self._admit(request_tokens + estimate, estimate, deadline)
            if ticket is None:
                for i in batch:
                    verdicts[i] = refusal
                continue
            request_tokens += estimate
            calls.append((batch, self._call(messages, len(batch), ticket, deadline)))
        results = await asyncio.gather(*(call for _, call in calls))
        fresh: list[tuple[str, Verdict]] = []
        for (batch, _), batch_verdicts in zip(calls, results, strict=True):
            for i, verdict in zip(batch, batch_verdicts, strict=True):
                verdicts[i] = verdict
                if verdict.outcome in (Outcome.YES, Outcome.NO):
                    fresh.append((keys[i], verdict))
        if self._cache is not None and fresh:
            await asyncio.to_thread(self._store, fresh)
        done = [v if v is not None else self._unavailable("not judged") for v in verdicts]
        for verdict in done:
            JUDGE_ITEMS.labels(task.value, verdict.outcome.value).inc()
        return done

    def _admit(
        self, request_tokens: int, estimate: int, deadline: float
    ) -> tuple[Verdict | None, list[float] | None]:
        """A budget ticket for one call, or the refusal that stands in for its verdicts."""
        if request_tokens > self._limits.max_tokens:
            detail = f"the request's judge budget of {self._limits.max_tokens} tokens is spent"
            return self._refused("request", detail), None
        if time.monotonic() >= deadline:
            return self._refused("deadline", "no time left before the deadline"), None
        ticket = self._budget.reserve(estimate)
        if ticket is None:
            detail = "the process's judge budget per minute is spent"
            return self._refused("process", detail), None
        return None, ticket

    def _cache_key(self, task: Task, item: Item) -> str:
        """The item's cache key under these settings: the endpoint (host, port and path, no
        credential), model, ``LOGPROBS`` and ``MIN_SCORE`` are part of it."""
        return cache_key(
            task,
            self.model,
            item,
            self._style,
            endpoint=self._endpoint,
            logprobs=self._settings.logprobs,
            min_score=self._settings.min_score,
        )

    def _lookup(self, keys: Sequence[str]) -> list[Verdict | None]:
        assert self._cache is not None
        # The key holds the endpoint, model, prompt version and style, LOGPROBS and MIN_SCORE:
        # an entry is what a fresh call under these settings decided. The floor is applied
        # again all the same, so an entry can never pass a floor a fresh reply would not.
        found = [
            self._cache.get(key, partial(decode_verdict, mac_key=self._mac_key, name=key))
            for key in keys
        ]
        return [None if v is None else self._floored(v) for v in found]

    def _floored(self, cached: Verdict) -> Verdict:
        """A cached verdict under the current floor (a YES below ``MIN_SCORE`` is a NO)."""
        if cached.outcome is not Outcome.YES:
            return cached
        verdict = self._verdict(True, cached.score)
        return dataclasses.replace(verdict, cached=True)

    def _store(self, entries: Sequence[tuple[str, Verdict]]) -> None:
        assert self._cache is not None
        for key, verdict in entries:
            self._cache.set(key, encode_verdict(verdict, mac_key=self._mac_key, name=key))

    def _refused(self, scope: str, detail: str) -> Verdict:
        JUDGE_BUDGET_EXHAUSTED.labels(scope).inc()
        outcome = Outcome.UNAVAILABLE if scope == "deadline" else Outcome.BUDGET_EXHAUSTED
        return Verdict(outcome, self.model, detail=detail)

    def _unavailable(self, detail: str) -> Verdict:
        return Verdict(Outcome.UNAVAILABLE, self.model, detail=detail)

    async def _call(
        self,
        messages: list[dict[str, str]],
        count: int,
        ticket: list[float],
        deadline: float,
    ) -> list[Verdict]:
        async with self._slots:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                JUDGE_BUDGET_EXHAUSTED.labels("deadline").inc()
                return [self._unavailable("no time left waiting for a judge slot")] * count
            started = time.perf_counter()
            try:
                response = await self._timed(
                    ticket,
                    started,
                    asyncio.wait_for(
                        self._client.chat.completions.create(
                            model=self.model,
                            messages=messages,  # type: ignore[arg-type]
                            temperature=0,
                            max_tokens=reply_tokens(count),
                            timeout=remaining,
                            **self._logprob_args(),
                        ),
                        timeout=remaining,
                    ),
                )
            except (TimeoutError, openai.APITimeoutError):
                return self._failed("timeout", f"no reply within {remaining:.2f}s", count, started)
            except openai.APIStatusError as exc:
                return self._failed("error", f"HTTP {exc.status_code}", count, started)
            except Exception as exc:
                return self._failed("error", type(exc).__name__, count, started)
        JUDGE_LATENCY.observe(time.perf_counter() - started)
        usage = response.usage
        if usage is not None:
            self._budget.settle(ticket, usage.total_tokens)
            JUDGE_TOKENS.labels("prompt").inc(usage.prompt_tokens)
            JUDGE_TOKENS.labels("completion").inc(usage.completion_tokens)
        choice = response.choices[0] if response.choices else None
        text = choice.message.content if choice is not None else None
        try:
            answers = parse_reply(text or "", count, self._style)
        except ReplyError as exc:
            JUDGE_CALLS.labels("malformed").inc()
            logger.warning("judge reply rejected: %s", exc)
            return [self._unavailable(f"malformed judge reply: {exc}")] * count
        JUDGE_CALLS.labels("ok").inc()
        scores = answer_scores(_logprobs(choice), answers)
        return [self._verdict(a, s) for a, s in zip(answers, scores, strict=True)]

    async def _timed(self, ticket: list[float], started: float, call: Awaitable[T]) -> T:
        """``call``'s result; its time is charged to the process budget whatever happens."""
        try:
            return await call
        finally:
            self._budget.timed(ticket, time.perf_counter() - started)

    def _logprob_args(self) -> dict[str, Any]:
        if not self._settings.logprobs:
            return {}
        return {"logprobs": True, "top_logprobs": _TOP_LOGPROBS}

    def _verdict(self, yes: bool, score: float | None) -> Verdict:
        if not yes:
            return Verdict(Outcome.NO, self.model, score)
        floor = self._settings.min_score
        if score is not None and score < floor:
            return Verdict(
                Outcome.NO,
                self.model,
                score,
                detail=f"the judge said yes with P(yes) {score:.2f}, below {floor:.2f}",
            )
        return Verdict(Outcome.YES, self.model, score)

    def _failed(self, result: str, detail: str, count: int, started: float) -> list[Verdict]:
        JUDGE_CALLS.labels(result).inc()
        JUDGE_LATENCY.observe(time.perf_counter() - started)
        logger.warning("judge call failed (%s): %s", result, detail)
        return [self._unavailable(f"judge {result}: {detail}")] * count


def endpoint_identity(base_url: str) -> str:
    """What tells one judge endpoint from another in a cache key: the base URL's scheme, host
    (lower-cased), port and path, without userinfo, query string or fragment."""
    parts = split_url(base_url)
    if parts is None:
        return base_url
    host = (parts.hostname or "").lower()
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme.lower()}://{host}{port}{parts.path.rstrip('/')}"


def _logprobs(choice: Any) -> list[TokenLogprob]:
    """The reply's token log-probabilities, or [] when the endpoint sent none."""
    content = getattr(getattr(choice, "logprobs", None), "content", None) or []
    return [
        TokenLogprob(
            t.token,
            t.logprob,
            {alt.token: alt.logprob for alt in (t.top_logprobs or [])},
        )
        for t in content
    ]


def judge_band(settings: JudgeSettings, default: Band) -> Band:
    """The configured uncertainty band, each end defaulting to ``default``'s. A band whose low
    end is above its high end (one end set past the other's default counts) is an
    ``InvalidSettingError`` naming both settings, whether or not a judge is configured."""
    low, high = default.with_ends(settings.band_low, settings.band_high)
    if low > high:
        p = settings.env_prefix
        raise InvalidSettingError(
            f"{p}BAND_LOW={low:g} is above {p}BAND_HIGH={high:g} (an unset end takes its "
            f"default, [{default.low:g}, {default.high:g})): the band needs low <= high"
        )
    return Band(low, high)


def build_judge(settings: JudgeSettings) -> OpenAIJudge | None:
    """The configured judge with its cache, or None when no endpoint is set; a cache without
    a signing key is a ``MissingSettingError``."""
    if not settings.enabled:
        return None
    settings.require_signed_cache()
    cache = (
        RedisStore(
            settings.cache_url,
            label="judge cache",
            ttl_s=settings.cache_ttl_s,
            on_event=lambda outcome: JUDGE_CACHE_EVENTS.labels(outcome).inc(),
        )
        if settings.cache_url
        else None
    )
    return OpenAIJudge(settings, cache=cache)

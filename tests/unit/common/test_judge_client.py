"""The judge client (real ``openai`` client) against the loopback OpenAI-protocol server:
agreeing, disagreeing, slow, failing and malformed replies, budgets, log-probabilities."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator, Iterator

import pytest

from services.common.config import (
    EnvReader,
    InvalidSettingError,
    JudgeSettings,
    MissingSettingError,
    Secret,
)
from services.common.judge import (
    Band,
    Item,
    Outcome,
    ProcessBudget,
    Task,
    Verdict,
    encode_verdict,
)
from services.common.judge_client import OpenAIJudge, build_judge, judge_band
from tests.support.fake_openai import (
    Delay,
    FakeOpenAIServer,
    HttpError,
    MalformedJson,
    Messages,
    Reply,
)
from tests.support.redis_server import RedisServer

ITEMS = [
    Item("Theft is punishable.", (("IPC_379_0", "Whoever commits theft shall be punished."),)),
    Item("Theft is punishable with death.", (("IPC_379_0", "... three years ..."),)),
    Item("Cheating is punishable.", (("IPC_417_0", "Whoever cheats shall be punished."),)),
]


def yes_unless_death(messages: Messages) -> str:
    """A scripted checker: each claim mentioning death is unsupported."""
    claims = re.findall(r"<claim>(.*?)</claim>", messages[-1]["content"])
    return "\n".join(
        f"{n}: {'no' if 'death' in claim else 'yes'}" for n, claim in enumerate(claims, 1)
    )


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(Reply(yes_unless_death)) as fake:
        yield fake


def settings(server: FakeOpenAIServer, **overrides: object) -> JudgeSettings:
    values: dict[str, object] = {
        "base_url": server.base_url,
        "model": "checker-7b",
        "api_key": Secret("sk-judge-secret"),
        "timeout_s": 2.0,
    }
    values.update(overrides)
    return JudgeSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def judge(server: FakeOpenAIServer) -> AsyncIterator[OpenAIJudge]:
    client = OpenAIJudge(settings(server))
    yield client
    await client.aclose()


class TestJudgeClient:
    async def test_judge_batches_a_requests_items_into_one_call(
        self, judge: OpenAIJudge, server: FakeOpenAIServer
    ) -> None:
        verdicts = await judge.judge(Task.SUPPORT, ITEMS, timeout_s=2.0)
        assert [v.outcome for v in verdicts] == [Outcome.YES, Outcome.NO, Outcome.YES]
        assert all(v.model == "checker-7b" and v.score is None for v in verdicts)
        (request,) = server.requests
        assert request.body["temperature"] == 0
        assert request.body["model"] == "checker-7b"
        assert request.headers["authorization"] == "Bearer sk-judge-secret"
        assert "logprobs" not in request.body

    async def test_judge_splits_into_calls_of_items_per_call(
        self, server: FakeOpenAIServer
    ) -> None:
        judge = OpenAIJudge(settings(server, items_per_call=2))
        verdicts = await judge.judge(Task.SUPPORT, ITEMS, timeout_s=2.0)
        await judge.aclose()
        assert [v.outcome for v in verdicts] == [Outcome.YES, Outcome.NO, Outcome.YES]
        assert len(server.requests) == 2

    @pytest.mark.parametrize(
        ("behaviour", "detail"),
        [
            (Reply("1: yes\n2: yes"), "malformed"),
            (Reply("All three claims are supported."), "malformed"),
            (Reply("1: yes\n2: perhaps\n3: yes"), "malformed"),
            (HttpError(503, "overloaded"), "HTTP 503"),
            (MalformedJson(), "error"),
            (Delay(5.0, Reply("1: yes\n2: yes\n3: yes")), "timeout"),
        ],
    )
    async def test_any_failure_leaves_every_item_unverified(
        self,
        judge: OpenAIJudge,
        server: FakeOpenAIServer,
        behaviour: Reply | HttpError | MalformedJson | Delay,
        detail: str,
    ) -> None:
        server.script(behaviour)
        verdicts = await judge.judge(Task.SUPPORT, ITEMS, timeout_s=0.5)
        assert [v.outcome for v in verdicts] == [Outcome.UNAVAILABLE] * 3
        assert all(detail in v.detail for v in verdicts), verdicts[0].detail
        assert all("sk-judge-secret" not in v.detail for v in verdicts)

    async def test_no_time_left_asks_nothing(
        self, judge: OpenAIJudge, server: FakeOpenAIServer
    ) -> None:
        verdicts = await judge.judge(Task.SUPPORT, ITEMS, timeout_s=0.0)
        assert [v.outcome for v in verdicts] == [Outcome.UNAVAILABLE] * 3
        assert server.requests == []

    async def test_items_past_the_request_limit_are_budget_exhausted(
        self, server: FakeOpenAIServer
    ) -> None:
        judge = OpenAIJudge(settings(server, max_items_per_request=2))
        verdicts = await judge.judge(Task.SUPPORT, ITEMS, timeout_s=2.0)
        await judge.aclose()
        assert [v.outcome for v in verdicts] == [
            Outcome.YES,
            Outcome.NO,
            Outcome.BUDGET_EXHAUSTED,
        ]

    async def test_request_token_budget_refuses_what_does_not_fit(
        self, server: FakeOpenAIServer
    ) -> None:
        judge = OpenAIJudge(settings(server, max_tokens_per_request=100))
        verdicts = await judge.judge(Task.SUPPORT, ITEMS, timeout_s=2.0)
        await judge.aclose()
        assert {v.outcome for v in verdicts} == {Outcome.BUDGET_EXHAUSTED}
        assert server.requests == []

    async def test_process_budget_refuses_once_spent(self, server: FakeOpenAIServer) -> None:
        judge = OpenAIJudge(settings(server), budget=ProcessBudget(calls_per_minute=1))
        first = await judge.judge(Task.SUPPORT, ITEMS[:1], timeout_s=2.0)
        second = await judge.judge(Task.SUPPORT, ITEMS[:1], timeout_s=2.0)
        await judge.aclose()
        assert first[0].outcome is Outcome.YES
        assert second[0].outcome is Outcome.BUDGET_EXHAUSTED
        assert "per minute" in second[0].detail
        assert len(server.requests) == 1

    async def test_a_slow_call_spends_the_process_time_budget(
        self, server: FakeOpenAIServer
    ) -> None:
        server.script(Delay(0.3, Reply(yes_unless_death)))
        judge = OpenAIJudge(settings(server), budget=ProcessBudget(seconds_per_minute=0.2))
        first = await judge.judge(Task.SUPPORT, ITEMS[:1], timeout_s=2.0)
        second = await judge.judge(Task.SUPPORT, ITEMS[:1], timeout_s=2.0)
        await judge.aclose()
        assert first[0].outcome is Outcome.YES
        assert second[0].outcome is Outcome.BUDGET_EXHAUSTED
        assert len(server.requests) == 1

    async def test_logprobs_give_a_score_and_a_weak_yes_is_a_no(
        self, server: FakeOpenAIServer
    ) -> None:
        judge = OpenAIJudge(settings(server, logprobs=True, min_score=0.7))
        server.script(Reply(yes_unless_death, p_yes=0.9))
        confident = await judge.judge(Task.SUPPORT, ITEMS[:1], timeout_s=2.0)
        server.script(Reply(yes_unless_death, p_yes=0.6))
        weak = await judge.judge(Task.SUPPORT, ITEMS[:1], timeout_s=2.0)
        await judge.aclose()
        assert server.requests[0].body["logprobs"] is True
        assert confident[0].outcome is Outcome.YES
        assert confident[0].score == pytest.approx(0.9)
        assert weak[0].outcome is Outcome.NO
        assert "below 0.70" in weak[0].detail

    async def test_document_claim_style_sends_one_claim_per_call(
        self, server: FakeOpenAIServer
    ) -> None:
        def checker(messages: Messages) -> str:
            return "No" if "death" in messages[-1]["content"].split("\nClaim: ")[1] else "Yes"

        server.script(Reply(checker))
        judge = OpenAIJudge(settings(server, prompt="document-claim"))
        verdicts = await judge.judge(Task.SUPPORT, ITEMS, timeout_s=2.0)
        answers = await judge.judge(Task.ANSWERS, ITEMS[:1], timeout_s=2.0)
        await judge.aclose()
        assert [v.outcome for v in verdicts] == [Outcome.YES, Outcome.NO, Outcome.YES]
        assert len(server.requests) == 3
        assert all(len(r.messages) == 1 for r in server.requests)
        assert server.requests[0].messages[0]["content"].startswith("Document: ")
        assert answers[0].outcome is Outcome.UNAVAILABLE

    def test_repr_never_shows_the_key(self, server: FakeOpenAIServer) -> None:
        judge = OpenAIJudge(settings(server))
        assert "sk-judge-secret" not in repr(judge)
        assert "sk-judge-secret" not in repr(settings(server))

    def test_repr_never_shows_a_credential_in_the_base_url(self, server: FakeOpenAIServer) -> None:
        """The repr is logged at start-up ("judge tier on")."""
        url = "https://user:pw-secret@judge.example:8443/v1?api-key=q-secret#frag"
        judge = OpenAIJudge(dataclasses.replace(settings(server), base_url=url))
        shown = repr(judge)
        assert "https://judge.example:8443/v1" in shown
        assert not any(s in shown for s in ("pw-secret", "q-secret", "user", "frag"))


class TestJudgeSettings:
    def test_off_without_a_base_url(self) -> None:
        assert not JudgeSettings.from_env(EnvReader("VALIDATOR_", {})).enabled

    def test_a_base_url_needs_a_model(self) -> None:
        env = EnvReader("VALIDATOR_", {"VALIDATOR_JUDGE_BASE_URL": "http://judge:8000/v1"})
        with pytest.raises(MissingSettingError, match="VALIDATOR_JUDGE_MODEL"):
            JudgeSettings.from_env(env)

    def test_settings_read_under_the_service_prefix(self) -> None:
        env = EnvReader(
            "SYNTHESIS_",
            {
                "SYNTHESIS_JUDGE_BASE_URL": "https://judge:8000/v1",
                "SYNTHESIS_JUDGE_MODEL": "checker-7b",
                "SYNTHESIS_JUDGE_API_KEY": "sk-x",
                "SYNTHESIS_JUDGE_BAND_LOW": "0.2",
                "SYNTHESIS_JUDGE_CALLS_PER_MINUTE": "600",
            },
        )
        s = JudgeSettings.from_env(env)
        assert (s.enabled, s.model, s.api_key.reveal()) == (True, "checker-7b", "sk-x")
        assert (s.band_low, s.band_high, s.calls_per_minute) == (0.2, None, 600)
        assert (s.timeout_s, s.env_prefix) == (10.0, "SYNTHESIS_JUDGE_")

    def test_an_invalid_value_is_named_with_what_it_accepts(self) -> None:
        env = EnvReader("SYNTHESIS_", {"SYNTHESIS_JUDGE_TIMEOUT_S": "not a number"})
        with pytest.raises(InvalidSettingError) as info:
            JudgeSettings.from_env(env)
        assert str(info.value) == (
            "SYNTHESIS_JUDGE_TIMEOUT_S='not a number': expected a number from 0.05 to 600"
        )

    @pytest.mark.parametrize(
        ("environ", "named"),
        [
            ({"VALIDATOR_JUDGE_BAND_LOW": "0.95"}, "VALIDATOR_JUDGE_BAND_LOW=0.95"),
            ({"VALIDATOR_JUDGE_BAND_HIGH": "0.01"}, "VALIDATOR_JUDGE_BAND_HIGH=0.01"),
            (
                {"VALIDATOR_JUDGE_BAND_LOW": "0.6", "VALIDATOR_JUDGE_BAND_HIGH": "0.4"},
                "VALIDATOR_JUDGE_BAND_LOW=0.6 is above VALIDATOR_JUDGE_BAND_HIGH=0.4",
            ),
        ],
    )
    def test_an_inverted_band_is_named_even_without_a_judge(
        self, environ: dict[str, str], named: str
    ) -> None:
        settings = JudgeSettings.from_env(EnvReader("VALIDATOR_", environ))
        assert not settings.enabled
        with pytest.raises(InvalidSettingError, match=named):
            judge_band(settings, Band(0.05, 0.9))

    def test_one_end_set_within_the_default_band_keeps_the_other(self) -> None:
        env = EnvReader("VALIDATOR_", {"VALIDATOR_JUDGE_BAND_LOW": "0.5"})
        band = judge_band(JudgeSettings.from_env(env), Band(0.05, 0.9))
        assert (band.low, band.high) == (0.5, 0.9)


def test_a_verdict_cache_without_a_signing_key_does_not_start(server: FakeOpenAIServer) -> None:
    """Unsigned entries would let whoever can write to the Redis decide a verdict (audit LOW-4):
    a cache URL without a cache key is a configuration error naming the setting, read from the
    environment or handed to build_judge."""
    env = EnvReader(
        "X_",
        {
            "X_JUDGE_BASE_URL": server.base_url,
            "X_JUDGE_MODEL": "checker-7b",
            "X_JUDGE_CACHE_URL": "redis://127.0.0.1:1/0",
        },
    )
    with pytest.raises(MissingSettingError, match=r"^X_JUDGE_CACHE_KEY must be set when"):
        JudgeSettings.from_env(env)
    unsigned = settings(server, cache_url="redis://127.0.0.1:1/0", env_prefix="X_JUDGE_")
    with pytest.raises(MissingSettingError, match=r"^X_JUDGE_CACHE_KEY must be set when"):
        build_judge(unsigned)


async def test_a_signed_verdict_cache_starts(server: FakeOpenAIServer) -> None:
    signed = settings(server, cache_url="redis://127.0.0.1:1/0", cache_key=Secret("k"))
    judge = build_judge(signed)
    assert judge is not None
    await judge.aclose()


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


class TestVerdictCache:
    """A cached verdict gives the decision a fresh call would give under the current settings
    (audit MEDIUM-2: a "yes" cached under MIN_SCORE 0.5 stayed "yes" after it was raised)."""

    KEY = Secret("a-shared-secret")

    @pytest.fixture(autouse=True)
    def _empty(self, redis_server: RedisServer) -> None:
        redis_server.client().flushall()

    async def ask(self, server: FakeOpenAIServer, redis_url: str, **overrides: object) -> Verdict:
        configured = settings(server, cache_url=redis_url, cache_key=self.KEY, **overrides)
        judge = build_judge(configured)
        assert judge is not None
        try:
            (verdict,) = await judge.judge(Task.SUPPORT, ITEMS[:1], timeout_s=2.0)
        finally:
            await judge.aclose()
        return verdict

    async def test_a_raised_min_score_is_applied_to_what_was_cached(
        self, server: FakeOpenAIServer, redis_server: RedisServer
    ) -> None:
        server.script(Reply(yes_unless_death, p_yes=0.6))
        first = await self.ask(server, redis_server.url, logprobs=True, min_score=0.5)
        again = await self.ask(server, redis_server.url, logprobs=True, min_score=0.5)
        raised = await self.ask(server, redis_server.url, logprobs=True, min_score=0.9)
        assert (first.outcome, again.outcome, again.cached) == (Outcome.YES, Outcome.YES, True)
        assert raised.outcome is Outcome.NO and "below 0.90" in raised.detail

    async def test_a_yes_cached_without_log_probabilities_is_not_read_with_them(
        self, server: FakeOpenAIServer, redis_server: RedisServer
    ) -> None:
        server.script(Reply(yes_unless_death, p_yes=0.6))
        plain = await self.ask(server, redis_server.url, logprobs=False, min_score=0.7)
        scored = await self.ask(server, redis_server.url, logprobs=True, min_score=0.7)
        assert (plain.outcome, plain.score) == (Outcome.YES, None)
        assert (scored.outcome, scored.cached) == (Outcome.NO, False)
        assert len(server.requests) == 2

    async def test_endpoints_serving_the_same_model_name_do_not_share_entries(
        self, server: FakeOpenAIServer, redis_server: RedisServer
    ) -> None:
        await self.ask(server, redis_server.url)
        with FakeOpenAIServer(Reply(lambda m: "1: no")) as other:
            elsewhere = await self.ask(other, redis_server.url)
        assert (elsewhere.outcome, elsewhere.cached) == (Outcome.NO, False)

    async def test_an_entry_below_the_floor_is_read_as_a_no(
        self, server: FakeOpenAIServer, redis_server: RedisServer
    ) -> None:
        """Defence in depth: a signed "yes" under this very key whose score is below the floor
        (an entry from before the floor was part of the key) still counts as a no."""
        configured = settings(
            server, cache_url=redis_server.url, cache_key=self.KEY, logprobs=True, min_score=0.9
        )
        judge = build_judge(configured)
        assert judge is not None
        key = judge._cache_key(Task.SUPPORT, ITEMS[0])
        weak = Verdict(Outcome.YES, "checker-7b", 0.6)
        redis_server.client().set(key, encode_verdict(weak, mac_key=b"a-shared-secret", name=key))
        try:
            (verdict,) = await judge.judge(Task.SUPPORT, ITEMS[:1], timeout_s=2.0)
        finally:
            await judge.aclose()
        assert (verdict.outcome, verdict.cached) == (Outcome.NO, True)
        assert server.requests == []

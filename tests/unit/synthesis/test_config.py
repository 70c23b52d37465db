"""Synthesis's shutdown budget: the slowest answer its dependency limits allow, the drain that
defaults to it, and the start-up warning when a drain is set shorter; the OpenAI settings that
reach the generator."""

from __future__ import annotations

import logging

import pytest

from services.common.config import InvalidSettingError
from services.synthesis import server as synthesis_server
from services.synthesis.config import SynthesisConfig

LOCAL = {"SYNTHESIS_PORT": "0", "SYNTHESIS_METRICS_PORT": "0"}


def config(**settings: str) -> SynthesisConfig:
    return SynthesisConfig.from_env({f"SYNTHESIS_{k}": v for k, v in settings.items()})


class TestSlowestAnswer:
    def test_defaults_retrieval_statement_check_and_validation(self) -> None:
        # A statement is checked by the validator before the answer is drafted (both default).
        assert config().slowest_answer_s == 5 + 5 + 5

    def test_without_the_statement_check(self) -> None:
        assert config(ANSWERABILITY="off").slowest_answer_s == 5 + 5
        assert config(ANSWERABILITY_STATEMENTS="model").slowest_answer_s == 5 + 5

    def test_each_limit_counts(self) -> None:
        c = config(RETRIEVAL_TIMEOUT_S="2", VALIDATOR_TIMEOUT_S="3")
        assert c.slowest_answer_s == 2 + 3 + 3

    def test_second_hop_retrieves_again(self) -> None:
        assert config(SECOND_HOP="true").slowest_answer_s == 5 + 5 + 5 + 5

    def test_an_offered_llm_counts_even_when_not_the_default(self) -> None:
        # A caller may pick it per request once an endpoint is configured.
        assert config(GENERATOR="openai", OPENAI_TIMEOUT_S="20").slowest_answer_s == 35
        offered = config(OPENAI_BASE_URL="http://llm:8000/v1", OPENAI_TIMEOUT_S="7")
        assert offered.openai_offered
        assert offered.slowest_answer_s == 5 + 5 + 7 + 5

    def test_a_judge_the_mode_never_asks_is_not_counted(self) -> None:
        judged = dict(JUDGE_BASE_URL="http://judge:8000/v1", JUDGE_MODEL="m", JUDGE_TIMEOUT_S="9")
        assert config(**judged, ANSWERABILITY="shadow").slowest_answer_s == 5 + 5 + 5
        assert config(**judged, ANSWERABILITY="off").slowest_answer_s == 5 + 5

    def test_the_judge_and_the_statement_check_never_both(self) -> None:
        judged = dict(JUDGE_BASE_URL="http://judge:8000/v1", JUDGE_MODEL="m")
        assert config(**judged, JUDGE_TIMEOUT_S="9").slowest_answer_s == 5 + 9 + 5
        assert config(**judged, JUDGE_TIMEOUT_S="2").slowest_answer_s == 5 + 5 + 5


class TestGrace:
    def test_unset_grace_is_the_slowest_answer(self) -> None:
        assert config().server.grace_s == 15
        assert config(GENERATOR="openai").server.grace_s == 35
        assert config(ANSWERABILITY="off").server.grace_s == 10

    def test_a_set_grace_is_kept(self) -> None:
        assert config(GRACE_S="3").server.grace_s == 3
        assert config(GRACE_S=" ").server.grace_s == 15  # blank reads as unset

    async def test_a_shorter_grace_is_warned_about_at_start_up(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.WARNING, logger="services.synthesis.server"):
            app = synthesis_server.create_app(
                SynthesisConfig.from_env({**LOCAL, "SYNTHESIS_GRACE_S": "3"})
            )
        assert app.on_stop is not None
        await app.on_stop()
        warned = [r.getMessage() for r in caplog.records if "SYNTHESIS_GRACE_S" in r.getMessage()]
        assert warned == [
            "SYNTHESIS_GRACE_S=3 is shorter than the slowest answer these limits allow (15 s: "
            "retrieval, the judge or a statement check, the LLM if offered, validation): answers "
            "in flight at shutdown may be cut off"
        ]

    async def test_no_warning_with_the_default_grace(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.WARNING, logger="services.synthesis.server"):
            app = synthesis_server.create_app(SynthesisConfig.from_env(dict(LOCAL)))
        assert app.on_stop is not None
        await app.on_stop()
        assert not [r for r in caplog.records if "SYNTHESIS_GRACE_S" in r.getMessage()]


class TestOpenAI:
    def test_streamed_requests_ask_for_usage_unless_turned_off(self) -> None:
        assert config().openai.stream_usage
        assert synthesis_server._openai_settings(config()).stream_usage
        off = config(OPENAI_STREAM_USAGE="false")
        assert not off.openai.stream_usage
        assert not synthesis_server._openai_settings(off, "other-model").stream_usage


class TestAllowedModels:
    """SYNTHESIS_OPENAI_ALLOWED_MODELS: the models a request may name besides the configured
    one (a security audit found any model the API key can use open to every caller)."""

    def test_unset_offers_the_configured_model_alone(self) -> None:
        assert config().openai.allowed_models == ()
        assert config(OPENAI_ALLOWED_MODELS="  ").openai.allowed_models == ()

    def test_names_are_read_as_written_trimmed_once_each(self) -> None:
        read = config(OPENAI_ALLOWED_MODELS=" gpt-4o , ft:gpt-4o-mini:acme:legal:x1,,gpt-4o,")
        assert read.openai.allowed_models == ("gpt-4o", "ft:gpt-4o-mini:acme:legal:x1")

    def test_a_star_alone_allows_any_model(self) -> None:
        assert config(OPENAI_ALLOWED_MODELS="*").openai.allowed_models is None
        assert config(OPENAI_ALLOWED_MODELS=" * ").openai.allowed_models is None

    @pytest.mark.parametrize(
        "value", ["*,gpt-4o", "gpt-4o,*", "x" * 201, "gpt\x00-4o", "gpt-4o,\u200bmini"]
    )
    def test_a_bad_value_stops_start_up_naming_the_setting(self, value: str) -> None:
        with pytest.raises(InvalidSettingError, match="SYNTHESIS_OPENAI_ALLOWED_MODELS="):
            config(OPENAI_ALLOWED_MODELS=value)


class TestOpenAIBaseUrl:
    """SYNTHESIS_OPENAI_BASE_URL is checked at start-up (audit LOW-5)."""

    def test_userinfo_and_plain_http_with_a_key_are_refused(self) -> None:
        with pytest.raises(InvalidSettingError, match=r"^SYNTHESIS_OPENAI_BASE_URL: a URL with"):
            config(OPENAI_BASE_URL="http://user:pw@169.254.169.254/latest/", OPENAI_API_KEY="k")
        with pytest.raises(InvalidSettingError, match="plain http would send the API key"):
            config(OPENAI_BASE_URL="http://203.0.113.7/v1", OPENAI_API_KEY="k")
        with pytest.raises(InvalidSettingError, match="expected an http:// or https:// URL"):
            config(OPENAI_BASE_URL="ftp://x/v1")

    def test_a_cluster_local_service_needs_the_opt_in(self) -> None:
        url = "http://llm.models.svc:8000/v1"
        with pytest.raises(InvalidSettingError, match="SYNTHESIS_OPENAI_ALLOW_PLAINTEXT=true"):
            config(OPENAI_BASE_URL=url, OPENAI_API_KEY="k")
        opted = config(OPENAI_BASE_URL=url, OPENAI_API_KEY="k", OPENAI_ALLOW_PLAINTEXT="true")
        assert opted.openai.base_url == url

    def test_loopback_and_https_start(self) -> None:
        for url in ("http://127.0.0.1:41234/v1", "https://api.openai.com/v1"):
            assert config(OPENAI_BASE_URL=url, OPENAI_API_KEY="k").openai.base_url == url

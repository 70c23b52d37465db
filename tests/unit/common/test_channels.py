"""Client channel policy (balancing, retries, reconnect) and the servers' connection age."""

from __future__ import annotations

import json

import grpc
import pytest
from grpc import aio

from services.common import errors, status
from services.common.channels import ChannelPolicy, call_idempotent
from services.common.config import EnvReader, InvalidSettingError, ServerSettings
from services.synthesis.config import SynthesisConfig

METHOD = "grounded.retrieval.v1.RetrievalService/RetrievePassages"


class TestChannelPolicy:
    def test_service_config_balances_per_call_and_retries_only_unavailable(self) -> None:
        config = json.loads(ChannelPolicy(retry_methods=(METHOD,), max_attempts=4).service_config())

        assert config["loadBalancingConfig"] == [{"round_robin": {}}]
        (method,) = config["methodConfig"]
        assert method["name"] == [
            {"service": "grounded.retrieval.v1.RetrievalService", "method": "RetrievePassages"}
        ]
        retry = method["retryPolicy"]
        assert retry["maxAttempts"] == 4
        assert retry["retryableStatusCodes"] == ["UNAVAILABLE"]
        assert (retry["initialBackoff"], retry["maxBackoff"]) == ("0.1s", "1s")

    def test_one_attempt_means_no_retry_policy(self) -> None:
        config = json.loads(ChannelPolicy(retry_methods=(METHOD,), max_attempts=1).service_config())

        assert "methodConfig" not in config

    def test_pick_first_is_kept_when_asked_for(self) -> None:
        config = json.loads(ChannelPolicy(load_balancing="pick_first").service_config())

        assert config == {"loadBalancingConfig": [{"pick_first": {}}]}

    def test_a_health_service_turns_on_client_side_health_checking(self) -> None:
        name = "grounded.validator.v1.ValidatorService"
        config = json.loads(ChannelPolicy(health_service=name).service_config())

        assert config["healthCheckConfig"] == {"serviceName": name}
        assert "healthCheckConfig" not in json.loads(ChannelPolicy().service_config())

    def test_an_unknown_policy_is_refused(self) -> None:
        with pytest.raises(ValueError, match="load_balancing"):
            ChannelPolicy(load_balancing="random")


class TestSettings:
    def test_synthesis_reads_balancing_retries_and_backoff(self) -> None:
        config = SynthesisConfig.from_env(
            {
                "SYNTHESIS_LB_POLICY": "pick_first",
                "SYNTHESIS_RETRY_ATTEMPTS": "1",
                "SYNTHESIS_RECONNECT_BACKOFF_MAX_S": "2.5",
            }
        )

        assert (config.load_balancing, config.retry_attempts) == ("pick_first", 1)
        assert config.reconnect_backoff_max_s == 2.5

    def test_synthesis_defaults_balance_and_retry(self) -> None:
        config = SynthesisConfig.from_env({})

        assert (config.load_balancing, config.retry_attempts) == ("round_robin", 4)
        assert config.reconnect_backoff_max_s == 1.0

    def test_an_empty_policy_is_the_default_round_robin(self) -> None:
        assert SynthesisConfig.from_env({"SYNTHESIS_LB_POLICY": ""}).load_balancing == (
            "round_robin"
        )

    def test_an_unknown_policy_stops_start_up_naming_the_choices(self) -> None:
        with pytest.raises(InvalidSettingError) as info:
            SynthesisConfig.from_env({"SYNTHESIS_LB_POLICY": "random"})
        assert str(info.value) == (
            "SYNTHESIS_LB_POLICY='random': expected one of round_robin, pick_first"
        )

    def test_a_policy_is_read_without_regard_to_case(self) -> None:
        config = SynthesisConfig.from_env({"SYNTHESIS_LB_POLICY": "Pick_First"})
        assert config.load_balancing == "pick_first"

    def test_server_connection_age_is_off_unless_set(self) -> None:
        default = ServerSettings.from_env(
            EnvReader("X_", {}), default_port=1, default_metrics_port=2
        )
        aged = ServerSettings.from_env(
            EnvReader("X_", {"X_MAX_CONNECTION_AGE_S": "300", "X_MAX_CONNECTION_AGE_GRACE_S": "5"}),
            default_port=1,
            default_metrics_port=2,
        )

        assert default.max_connection_age_s == 0.0
        assert (aged.max_connection_age_s, aged.max_connection_age_grace_s) == (300.0, 5.0)


def _rpc_error(code: grpc.StatusCode) -> aio.AioRpcError:
    return aio.AioRpcError(code, aio.Metadata(), aio.Metadata(), details="scripted")


class TestCallIdempotent:
    async def test_a_call_cut_mid_flight_is_sent_once_more(self) -> None:
        outcomes: list[object] = [_rpc_error(grpc.StatusCode.UNAVAILABLE), "answer"]
        budgets: list[float] = []

        async def call(left: float) -> str:
            budgets.append(left)
            outcome = outcomes.pop(0)
            if isinstance(outcome, BaseException):
                raise outcome
            return str(outcome)

        assert await call_idempotent(call, 5.0) == "answer"
        assert len(budgets) == 2 and budgets[1] <= budgets[0] <= 5.0

    @pytest.mark.parametrize(
        "code", [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.DEADLINE_EXCEEDED]
    )
    async def test_other_failures_are_not_retried(self, code: grpc.StatusCode) -> None:
        calls = 0

        async def call(left: float) -> str:
            nonlocal calls
            calls += 1
            raise _rpc_error(code)

        with pytest.raises(aio.AioRpcError):
            await call_idempotent(call, 5.0)
        assert calls == 1

    @pytest.mark.parametrize(
        ("error", "attempts"),
        [
            (errors.OverloadedError("the retrieval server is already handling 1024 calls"), 2),
            (errors.MessageTooLargeError("document 'BIG' is 9,000,000 bytes"), 1),
            (errors.NotReadyError("the validator service is still warming up"), 2),
            (errors.ModelUnavailableError("the model entailment-minilm-l6 failed to run"), 1),
        ],
        ids=["overloaded", "too-large", "not-ready", "model-unavailable"],
    )
    async def test_a_server_at_its_limit_is_asked_again_a_large_message_is_not(
        self, error: errors.GroundedError, attempts: int
    ) -> None:
        """Both are RESOURCE_EXHAUSTED: OVERLOADED refuses before any work, and round_robin
        sends the next attempt to another server; a message too large stays too large. Both
        NOT_READY and MODEL_UNAVAILABLE are UNAVAILABLE: a replica still warming up is worth
        passing over, a request its model failed on is not sent to the next replica's model
        (a query of death would take that one out of rotation too)."""
        rich = status.to_status(error)
        calls = 0

        async def call(left: float) -> str:
            nonlocal calls
            calls += 1
            raise aio.AioRpcError(
                rich.code, aio.Metadata(), aio.Metadata(*rich.trailing_metadata), rich.details
            )

        with pytest.raises(aio.AioRpcError):
            await call_idempotent(call, 5.0)
        assert calls == attempts

    async def test_it_gives_up_after_its_attempts(self) -> None:
        calls = 0

        async def call(left: float) -> str:
            nonlocal calls
            calls += 1
            raise _rpc_error(grpc.StatusCode.UNAVAILABLE)

        with pytest.raises(aio.AioRpcError):
            await call_idempotent(call, 5.0, attempts=2)
        assert calls == 2

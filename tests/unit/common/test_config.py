"""Settings come from prefixed environment variables; bad values fall back with a warning."""

from __future__ import annotations

import logging

import pytest

from services.common.config import EnvReader, MissingSettingError, Secret, ServerSettings


class TestEnvReader:
    def test_env_reader_reads_prefixed_values(self) -> None:
        env = EnvReader("X_", {"X_PORT": "1234", "X_ON": "yes", "X_RATIO": "0.5"})
        assert env.int("PORT", 1) == 1234
        assert env.bool("ON", False) is True
        assert env.float("RATIO", 0.1) == 0.5

    def test_env_reader_invalid_value_falls_back_with_warning(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        env = EnvReader("X_", {"X_PORT": "not-a-port", "X_TOP": "500"})
        with caplog.at_level(logging.WARNING):
            assert env.int("PORT", 50051) == 50051
            assert env.int("TOP", 5, maximum=100) == 5
        assert [r.setting for r in caplog.records] == ["X_PORT", "X_TOP"]  # type: ignore[attr-defined]

    def test_env_reader_choice_outside_list_falls_back(self) -> None:
        env = EnvReader("X_", {"X_GEN": "gpt"})
        assert env.str("GEN", "extractive", choices=("extractive", "openai")) == "extractive"

    def test_env_reader_missing_required_fails_fast(self) -> None:
        with pytest.raises(MissingSettingError, match="X_URL"):
            EnvReader("X_", {}).required("URL")

    def test_env_reader_blank_counts_as_unset(self) -> None:
        assert EnvReader("X_", {"X_PORT": "  "}).int("PORT", 7) == 7


class TestSecret:
    def test_secret_never_reveals_in_repr_or_str(self) -> None:
        secret = Secret("sk-very-secret")
        assert "sk-very" not in repr(secret)
        assert "sk-very" not in str(secret)
        assert "sk-very" not in f"{secret}"
        assert secret.reveal() == "sk-very-secret"


class TestServerSettings:
    def test_server_settings_defaults(self) -> None:
        settings = ServerSettings.from_env(
            EnvReader("V_", {}), default_port=50053, default_metrics_port=9093
        )
        assert (settings.host, settings.port, settings.grace_s) == ("127.0.0.1", 50053, 10.0)
        assert settings.tls.enabled is False

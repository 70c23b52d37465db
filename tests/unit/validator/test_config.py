"""Validator settings: the inline/worker-thread size limit."""

from __future__ import annotations

from services.validator.config import ValidatorConfig


class TestValidatorConfig:
    def test_config_inline_limit_defaults_to_32_kib(self) -> None:
        assert ValidatorConfig.from_env({}).inline_max_bytes == 32 * 1024

    def test_config_inline_limit_reads_the_environment(self) -> None:
        config = ValidatorConfig.from_env({"VALIDATOR_INLINE_MAX_BYTES": "0"})
        assert config.inline_max_bytes == 0

    def test_config_inline_limit_invalid_falls_back(self) -> None:
        config = ValidatorConfig.from_env({"VALIDATOR_INLINE_MAX_BYTES": "-1"})
        assert config.inline_max_bytes == 32 * 1024

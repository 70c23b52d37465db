"""Validator settings: the inline/worker-thread size limit."""

from __future__ import annotations

from services.validator.config import DEFAULT_MODEL_DIR, ValidatorConfig


class TestValidatorConfig:
    def test_config_inline_limit_defaults_to_32_kib(self) -> None:
        assert ValidatorConfig.from_env({}).inline_max_bytes == 32 * 1024

    def test_config_inline_limit_reads_the_environment(self) -> None:
        config = ValidatorConfig.from_env({"VALIDATOR_INLINE_MAX_BYTES": "0"})
        assert config.inline_max_bytes == 0

    def test_config_inline_limit_invalid_falls_back(self) -> None:
        config = ValidatorConfig.from_env({"VALIDATOR_INLINE_MAX_BYTES": "-1"})
        assert config.inline_max_bytes == 32 * 1024


class TestEntailmentSettings:
    def test_config_entailment_is_on_with_the_shipped_model(self) -> None:
        config = ValidatorConfig.from_env({})
        assert config.entailment and config.model_dir == DEFAULT_MODEL_DIR
        assert config.entail_threshold is None and config.model_threads == 1

    def test_config_entailment_can_be_switched_off(self) -> None:
        assert not ValidatorConfig.from_env({"VALIDATOR_ENTAILMENT": "off"}).entailment

    def test_config_threshold_overrides_are_read(self) -> None:
        config = ValidatorConfig.from_env(
            {"VALIDATOR_ENTAIL_THRESHOLD": "0.7", "VALIDATOR_COVERAGE_RESCUE_THRESHOLD": "0.9"}
        )
        assert (config.entail_threshold, config.coverage_rescue_threshold) == (0.7, 0.9)

    def test_config_invalid_threshold_keeps_the_model_value(self) -> None:
        config = ValidatorConfig.from_env({"VALIDATOR_ENTAIL_THRESHOLD": "1.5"})
        assert config.entail_threshold is None

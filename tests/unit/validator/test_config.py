"""Validator settings: the inline/worker-thread size limit."""

from __future__ import annotations

from services.common.validation import Reason
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


class TestJudgeReview:
    def test_review_defaults_to_the_word_counting_rules(self) -> None:
        config = ValidatorConfig.from_env({})
        assert config.judge_review == {Reason.LOW_COVERAGE, Reason.MISSING_CITATION}

    def test_review_reads_reason_codes_and_none(self) -> None:
        env = {"VALIDATOR_JUDGE_REVIEW": "number_mismatch, LOW_COVERAGE"}
        assert ValidatorConfig.from_env(env).judge_review == {
            Reason.NUMBER_MISMATCH,
            Reason.LOW_COVERAGE,
        }
        assert ValidatorConfig.from_env({"VALIDATOR_JUDGE_REVIEW": "none"}).judge_review == set()

    def test_review_of_an_unreviewable_rule_keeps_the_default(self) -> None:
        config = ValidatorConfig.from_env({"VALIDATOR_JUDGE_REVIEW": "INVALID_CITATION"})
        assert config.judge_review == {Reason.LOW_COVERAGE, Reason.MISSING_CITATION}

"""Validator settings: the inline/worker-thread size limit."""

from __future__ import annotations

import pytest

from services.common.config import InvalidSettingError
from services.common.validation import Reason
from services.validator.config import DEFAULT_MODEL_DIR, ValidatorConfig


class TestValidatorConfig:
    def test_config_inline_limit_defaults_to_32_kib(self) -> None:
        assert ValidatorConfig.from_env({}).inline_max_bytes == 32 * 1024

    def test_config_inline_limit_reads_the_environment(self) -> None:
        config = ValidatorConfig.from_env({"VALIDATOR_INLINE_MAX_BYTES": "0"})
        assert config.inline_max_bytes == 0

    def test_config_inline_limit_invalid_stops_start_up(self) -> None:
        with pytest.raises(InvalidSettingError, match=r"^VALIDATOR_INLINE_MAX_BYTES='-1'"):
            ValidatorConfig.from_env({"VALIDATOR_INLINE_MAX_BYTES": "-1"})
        assert ValidatorConfig.from_env({}).inline_max_bytes == 32 * 1024


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
        vetoing = ValidatorConfig.from_env({"VALIDATOR_CONTRADICTION_VETO_THRESHOLD": "0.6"})
        assert vetoing.contradiction_veto_threshold == 0.6
        assert ValidatorConfig.from_env({}).contradiction_veto_threshold is None

    @pytest.mark.parametrize("raw", ["1.5", "-0.1", "nan", "high"])
    def test_config_invalid_threshold_stops_start_up(self, raw: str) -> None:
        with pytest.raises(InvalidSettingError) as info:
            ValidatorConfig.from_env({"VALIDATOR_ENTAIL_THRESHOLD": raw})
        assert str(info.value) == (
            f"VALIDATOR_ENTAIL_THRESHOLD={raw!r}: expected a number from 0 to 1"
        )


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

    @pytest.mark.parametrize("raw", ["INVALID_CITATION", ",", "LOW_COVERAGE,nonsense"])
    def test_review_of_an_unreviewable_rule_stops_start_up(self, raw: str) -> None:
        with pytest.raises(InvalidSettingError, match=r"^VALIDATOR_JUDGE_REVIEW=.*LOW_COVERAGE"):
            ValidatorConfig.from_env({"VALIDATOR_JUDGE_REVIEW": raw})

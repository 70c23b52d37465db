"""check_settings: server settings given by name must be read by some service, or the run stops.

A misspelt ``--set`` name used to be ignored without a word: the stack ran with the default and
the report recorded the misspelt name as if it had been applied (2026-11-28, model card).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from services.common.config import InvalidSettingError, UnknownSettingError, close_names
from stack.inprocess import check_settings, settings_read, start_in_process


def test_settings_read_names_the_model_directories() -> None:
    read = settings_read()
    assert {"VALIDATOR_ENTAILMENT_MODEL_DIR", "SYNTHESIS_STATEMENT_MODEL_DIR"} <= read
    assert "RETRIEVAL_RERANK_MODEL_DIR" in read


def test_a_setting_a_service_reads_passes() -> None:
    check_settings({"SYNTHESIS_ANSWERABILITY": "shadow", "VALIDATOR_ENTAILMENT_MODEL_DIR": "x"})
    check_settings({})
    check_settings(None)


def test_a_misspelt_setting_is_refused_with_the_name_meant() -> None:
    with pytest.raises(UnknownSettingError) as caught:
        check_settings({"VALIDATOR_ENTAILMENT_MODEL_DRI": "x"})
    message = str(caught.value)
    assert "no service reads VALIDATOR_ENTAILMENT_MODEL_DRI" in message
    assert "did you mean VALIDATOR_ENTAILMENT_MODEL_DIR" in message


def test_a_setting_with_no_service_prefix_is_refused() -> None:
    with pytest.raises(UnknownSettingError, match="no service reads JUDGE_URL"):
        check_settings({"JUDGE_URL": "http://x"})


def test_a_name_the_services_read_unprefixed_is_refused() -> None:
    # every service looks LOG_LEVEL up, but service_env hands a service its own prefix only
    with pytest.raises(UnknownSettingError, match="no service reads LOG_LEVEL"):
        check_settings({"LOG_LEVEL": "debug"})


def test_a_bad_value_is_refused_as_at_start_up() -> None:
    with pytest.raises(InvalidSettingError, match="SYNTHESIS_ANSWERABILITY='bogus'"):
        check_settings({"SYNTHESIS_ANSWERABILITY": "bogus"})


def test_start_in_process_refuses_before_starting_anything(tmp_path: Path) -> None:
    # No index under tmp_path: had anything started, retrieval would fail on it instead.
    with pytest.raises(UnknownSettingError, match="SYNTHESIS_ANSWERABILTY"):
        asyncio.run(start_in_process(tmp_path, settings={"SYNTHESIS_ANSWERABILTY": "off"}))


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("ENTAILMENT_MODEL_DIR", ["VALIDATOR_ENTAILMENT_MODEL_DIR"]),
        ("VALIDATOR_ENTAILMENT_MODEL_DRI", ["VALIDATOR_ENTAILMENT_MODEL_DIR"]),
        ("NOTHING_LIKE_IT", []),
    ],
)
def test_close_names(name: str, meant: list[str]) -> None:
    known = ["VALIDATOR_ENTAILMENT_MODEL_DIR", "SYNTHESIS_STATEMENT_MODEL_DIR", "VALIDATOR_PORT"]
    assert close_names(name, known) == meant

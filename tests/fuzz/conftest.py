"""Reports how many generated inputs each fuzz target ran; the nightly profile enforces the total."""

from __future__ import annotations

import pytest

from tests.fuzz.profiles import INPUTS, NIGHTLY_MIN_INPUTS, PROFILE, TARGETS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not INPUTS:
        return
    terminalreporter.section(f"fuzz inputs (FUZZ_PROFILE={PROFILE})")
    for target in TARGETS:
        terminalreporter.write_line(f"{target:32s} {INPUTS[target]:>9,d}")
    terminalreporter.write_line(f"{'total':32s} {sum(INPUTS.values()):>9,d}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Only a full nightly run of every target is held to the total (not a -k selection).
    if PROFILE != "nightly" or exitstatus != 0 or set(INPUTS) != set(TARGETS):
        return
    total = sum(INPUTS.values())
    if total < NIGHTLY_MIN_INPUTS:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print(f"\nnightly fuzz ran {total:,d} inputs, fewer than {NIGHTLY_MIN_INPUTS:,d}")

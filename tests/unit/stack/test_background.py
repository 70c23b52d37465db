"""python -m stack up: a service that exits at start-up is reported at once, with its last words."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stack import background, wiring

SLEEP = [sys.executable, "-c", "import time; time.sleep(120)"]
CONFIG_ERROR = [
    sys.executable,
    "-c",
    "import sys; print(\"validator: configuration error: VALIDATOR_X='y': expected one of z\","
    " file=sys.stderr); sys.exit(2)",
]


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(background, "RUN_DIR", tmp_path)
    monkeypatch.setattr(background, "LOG_DIR", tmp_path / "logs")
    monkeypatch.setenv("REDIS_PORT", str(wiring.free_port()))
    for name in wiring.SERVICES:
        monkeypatch.setenv(f"{name.upper()}_PORT", str(wiring.free_port()))
    # Redis and the services that start fine sleep; the validator (checked first) exits at once.
    monkeypatch.setattr(background, "redis_argv", lambda port, data_dir: SLEEP)
    monkeypatch.setattr(
        background, "_service_argv", lambda name: CONFIG_ERROR if name == "validator" else SLEEP
    )
    return tmp_path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(pid, 0); /proc says whether it is one.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def test_a_service_that_exits_at_start_up_is_reported_at_once(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_info:
        background.up(str(run_dir / "index"), timeout_s=20.0)
    elapsed = time.monotonic() - started

    assert elapsed < 10.0, "waited for the time-out instead of seeing the exit"
    # The service's own exit status for a configuration error.
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "validator exited during start-up" in err
    assert "VALIDATOR_X='y'" in err  # the log's last line, not only "see the log"
    assert "stopped what this start had started (redis, validator, retrieval, synthesis)" in err
    # Everything this start started is stopped again, and no PID file is left to mislead `down`.
    assert not list(run_dir.glob("*.pid"))


def test_the_processes_started_are_stopped_after_a_failed_start(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawned: list[int] = []
    spawn = background._spawn

    def recording_spawn(
        name: str, argv: list[str], env: dict[str, str]
    ) -> subprocess.Popen[bytes] | None:
        proc = spawn(name, argv, env)
        if proc is not None:
            spawned.append(proc.pid)
        return proc

    monkeypatch.setattr(background, "_spawn", recording_spawn)
    with pytest.raises(SystemExit):
        background.up(str(run_dir / "index"), timeout_s=20.0)
    assert len(spawned) == 4
    assert not [pid for pid in spawned if _alive(pid)]

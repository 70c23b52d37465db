"""python -m stack up: a service that exits at start-up is reported at once; taken ports start nothing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stack import background, wiring
from tests.support.network import ipv6_loopback

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
        monkeypatch.setenv(f"{name.upper()}_METRICS_PORT", "0")
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


@pytest.mark.parametrize("setting", ["REDIS_PORT", "SYNTHESIS_PORT", "VALIDATOR_METRICS_PORT"])
def test_a_port_in_use_stops_the_start_before_anything_is_started(
    run_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setting: str,
) -> None:
    # Another stack's process, or anything else: a socket bound on the port, not even listening.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        monkeypatch.setenv(setting, str(port))
        with pytest.raises(SystemExit) as exit_info:
            background.up(str(run_dir / "index"), timeout_s=20.0)

    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"port {port} ({setting}" in err
    assert "make stop" in err
    assert not list(run_dir.glob("*.pid"))
    assert not (run_dir / "logs").exists()


def test_a_component_already_running_from_this_run_dir_keeps_its_port(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # make run again while the stack is up: its own ports are in use, and that is no error.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        monkeypatch.setenv("REDIS_PORT", str(port))
        (run_dir / "redis.pid").write_text(str(os.getpid()))
        assert background._ports_in_use(port, {name: 0 for name in wiring.SERVICES}) == []


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback on this machine")
@pytest.mark.parametrize("host", ["::", "[::]"])
def test_a_bracketed_ipv6_host_is_checked_as_the_service_binds_it(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    # "[::]" is an accepted spelling (config.unbracketed); binding it literally failed, and a
    # free port was reported taken (the review of 2026-11-27).
    monkeypatch.setenv("RETRIEVAL_HOST", host)
    ports = {name: wiring.free_port() for name in wiring.SERVICES}

    assert background._ports_in_use(wiring.free_port(), ports) == []

"""python -m stack up: a service that exits at start-up is reported at once; taken ports start nothing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
from grounded.retrieval.v1 import retrieval_service_pb2_grpc as rpb_grpc

from services.retrieval.store import Manifest
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
    return not background.zombie(pid)


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


def test_a_zombie_is_not_taken_for_a_running_process(run_dir: Path) -> None:
    """A Redis that died unreaped still answers kill(pid, 0): up said "already running" and
    went on without a cache (SRE audit 9)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, left unreaped
        os.kill(proc.pid, 0)  # still found
        (run_dir / "redis.pid").write_text(str(proc.pid))
        assert background._pid_alive("redis") is None
        assert not (run_dir / "redis.pid").exists()
    finally:
        proc.wait()


def test_a_redis_that_does_not_answer_ping_is_reported_not_used(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The PID file names a live process (this one), but nothing answers on REDIS_PORT.
    (run_dir / "redis.pid").write_text(str(os.getpid()))
    with pytest.raises(SystemExit) as exit_info:
        background.up(str(run_dir / "index"), timeout_s=20.0)
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert f"redis: pid {os.getpid()}" in err and "does not answer PING" in err
    assert [p.name for p in run_dir.glob("*.pid")] == ["redis.pid"]  # nothing else started


def test_redis_answers_means_a_reply_to_ping() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        def reply() -> None:
            conn, _ = server.accept()
            with conn:
                if conn.recv(64) == b"PING\r\n":
                    conn.sendall(b"+PONG\r\n")

        thread = threading.Thread(target=reply)
        thread.start()
        assert background._redis_answers(port)
        thread.join()
    assert not background._redis_answers(port)  # closed: nothing listens


class _Retrieval(rpb_grpc.RetrievalServiceServicer):
    def __init__(self, version: str) -> None:
        self.version = version

    def ListDocuments(self, request: object, context: object) -> rpb.ListDocumentsResponse:
        return rpb.ListDocumentsResponse(index_version=self.version)


def test_a_running_retrieval_on_another_index_is_named(tmp_path: Path) -> None:
    """make run after a re-ingest left the running retrieval on the old index, saying only
    "already running" (SRE audit 10)."""
    manifest = Manifest(
        schema_version=1,
        model="m",
        dim=4,
        chunk_count=1,
        document_count=1,
        index_kind="flat",
        index_options={},
        corpus_checksum="c0ffee",
        chunking={},
        embed_text="heading+text",
        sources=[],
        created_at="2026-11-27T00:00:00+00:00",
    )
    (tmp_path / "manifest.json").write_text(manifest.to_json())
    fake = _Retrieval("0123456789ab")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    rpb_grpc.add_RetrievalServiceServicer_to_server(fake, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        said = background._stale_index(str(tmp_path), f"127.0.0.1:{port}")
        assert said is not None
        assert f"serves index 0123456789ab, but {tmp_path / 'manifest.json'}" in said
        assert f"is index {manifest.index_version}" in said and "make stop && make run" in said
        fake.version = manifest.index_version
        assert background._stale_index(str(tmp_path), f"127.0.0.1:{port}") is None
    finally:
        server.stop(None)
    # Nothing to compare with: no manifest, or no retrieval answering.
    assert background._stale_index(str(tmp_path / "absent"), f"127.0.0.1:{port}") is None

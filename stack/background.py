"""The stack ``make run`` leaves running (Redis + the three services on fixed ports), by PID file.

``up`` is idempotent: a component whose PID is alive (not a zombie; Redis answering PING) is left
alone, and a retrieval left so that serves another index than ``--index-dir`` holds now is
named in a warning (not restarted: ``make stop && make run``). It returns once every service
is SERVING and one SynthesizeAnswer has gone through end to end. A service that exits during
start-up is reported at once with its log's last line (a configuration error names the setting),
and what this ``up`` started is stopped again. ``down`` stops what ``up`` started. Logs go to
var/run/logs/. Settings come from the environment (``RETRIEVAL_PORT``, ...), as for the services
themselves.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import grpc

from services.common.config import EnvReader, SettingError, bind_error, exit_on_setting_error
from stack.wiring import (
    OFFLINE_ENV,
    SERVICES,
    StackError,
    last_line,
    loopback,
    redis_argv,
    service_env,
    terminate,
    wait_serving,
)

RUN_DIR = Path(os.environ.get("RUN_DIR", "var/run"))
LOG_DIR = RUN_DIR / "logs"
# The Redis make run starts (a port of its own, so it never meets a Redis already running).
REDIS_PORT_DEFAULT = 6399
DEFAULT_PORTS = {"retrieval": 50051, "synthesis": 50052, "validator": 50053}
# The services' own defaults (services/*/config.py); 0 or below: no /metrics.
DEFAULT_METRICS_PORTS = {"retrieval": 9091, "synthesis": 9092, "validator": 9093}


def _pid_alive(name: str) -> int | None:
    """The PID its file names, if that process runs; else None (and the stale file is gone)."""
    pid_file = RUN_DIR / f"{name}.pid"
    if not pid_file.exists():
        return None
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError, PermissionError):
        pid_file.unlink(missing_ok=True)
        return None
    if zombie(pid):
        pid_file.unlink(missing_ok=True)
        return None
    return pid


def zombie(pid: int) -> bool:
    """Whether ``pid`` has exited but not been reaped (its state in /proc/<pid>/stat is Z):
    ``kill(pid, 0)`` still finds such a process, so a Redis that had died was taken for one
    running, and ``up`` went on without a cache."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # "<pid> (<comm>) <state> ...": comm may hold spaces and parentheses, the state follows
    # the last ")".
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def _redis_answers(port: int) -> bool:
    """Whether a Redis answers PING on loopback ``port`` within a second (any reply counts:
    one that wants a password still runs)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64)[:1] in (b"+", b"-")
    except OSError:
        return False


def _gone(name: str) -> Callable[[], bool]:
    return lambda: _pid_alive(name) is None


def _log(name: str) -> Path:
    return LOG_DIR / f"{name}.log"


def _exited(proc: subprocess.Popen[bytes]) -> Callable[[], bool]:
    """Whether a process this command started has exited. Its handle, not ``kill(pid, 0)``: a
    child that has exited stays a zombie until it is reaped, and ``kill`` still finds that."""
    return lambda: proc.poll() is not None


def _spawn(name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes] | None:
    """Start ``name`` unless its PID file names a live process; the new process, or None."""
    if pid := _pid_alive(name):
        print(f"{name}: already running (pid {pid})")
        return None
    # A new session: the process outlives this command and make's terminal. The child has its
    # own copy of the log's descriptor, so this process closes its one.
    with _log(name).open("ab") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            cwd=Path.cwd(),
        )
    (RUN_DIR / f"{name}.pid").write_text(str(proc.pid))
    print(f"{name}: started (pid {proc.pid}), log {_log(name)}")
    return proc


def _service_argv(name: str) -> list[str]:
    return [sys.executable, "-m", f"services.{name}"]


def _stop_started(started: dict[str, subprocess.Popen[bytes]]) -> None:
    """Stop what this ``up`` started, callers first, and drop their PID files."""
    for name in [*reversed(SERVICES), "redis"]:
        proc = started.get(name)
        if proc is None:
            continue
        if proc.poll() is None:
            terminate(proc.pid, exited=_exited(proc), timeout_s=15.0)
        (RUN_DIR / f"{name}.pid").unlink(missing_ok=True)


def _fail(error: str, started: dict[str, subprocess.Popen[bytes]], code: int) -> NoReturn:
    """Stop what this ``up`` started, say what is left from before, exit ``code``."""
    _stop_started(started)
    message = error
    if started:
        message += f"\nstack: stopped what this start had started ({', '.join(started)})"
    before = [name for name in ["redis", *SERVICES] if name not in started and _pid_alive(name)]
    if before:
        message += f"\nstack: still running from before: {', '.join(before)} (stop with: make stop)"
    print(message, file=sys.stderr)
    sys.exit(code)


def _port(name: str) -> int:
    """The port a service is started on, read as the service reads it (a bad value is named)."""
    return EnvReader(f"{name.upper()}_").int("PORT", DEFAULT_PORTS[name], minimum=1, maximum=65535)


def _redis_port() -> int:
    return EnvReader("").int("REDIS_PORT", REDIS_PORT_DEFAULT, minimum=1, maximum=65535)


def _in_use(host: str, port: int) -> bool:
    """Whether ``port`` on ``host`` cannot be bound now (a listener, or any socket bound there),
    as the service's own start-up would find (``config.bind_error``)."""
    return bind_error(host, port) is not None


def _ports_in_use(redis_port: int, ports: dict[str, int]) -> list[str]:
    """The ports this ``up`` would start something on that are taken, each with its setting.

    A component already running from this RUN_DIR is skipped (the port is its own). Without
    this check a second stack (another checkout, another RUN_DIR) reported SERVING: its processes
    died on "Address already in use" while the first stack answered its health checks. Metrics
    ports count too: the services run on without /metrics, and a scrape would reach the other
    stack's."""
    busy: list[str] = []
    if _pid_alive("redis") is None and _in_use("127.0.0.1", redis_port):
        busy.append(f"redis port {redis_port} (REDIS_PORT)")
    for name in SERVICES:
        if _pid_alive(name) is not None:
            continue
        env = EnvReader(f"{name.upper()}_")
        host = env.host("HOST", "127.0.0.1")  # read as the service reads it ("[::]" as "::")
        if _in_use(host, ports[name]):
            busy.append(f"{name} port {ports[name]} ({name.upper()}_PORT)")
        metrics = env.int("METRICS_PORT", DEFAULT_METRICS_PORTS[name], minimum=-1, maximum=65535)
        if metrics > 0 and _in_use(host, metrics):
            busy.append(
                f"{name} metrics port {metrics} ({name.upper()}_METRICS_PORT; 0 turns /metrics off)"
            )
    return busy


def up(index_dir: str, timeout_s: float) -> None:
    # Read every port first: a bad one stops here, before anything is started.
    redis_port = _redis_port()
    ports = {name: _port(name) for name in SERVICES}
    if busy := _ports_in_use(redis_port, ports):
        lines = "".join(f"\n  {line}" for line in busy)
        print(
            f"stack: not started, in use by another process:{lines}\n"
            "another stack (another checkout or RUN_DIR)? run make stop there, or set the"
            " settings named above to free ports",
            file=sys.stderr,
        )
        sys.exit(2)
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    # The environment wins, as it would for a service started by hand.
    base_env = {**OFFLINE_ENV, **os.environ}
    redis_url = os.environ.get("RETRIEVAL_REDIS_URL", f"redis://127.0.0.1:{redis_port}/0")
    redis_dir = RUN_DIR / "redis"
    redis_dir.mkdir(exist_ok=True)
    started: dict[str, subprocess.Popen[bytes]] = {}
    if proc := _spawn("redis", redis_argv(redis_port, redis_dir.resolve()), base_env):
        started["redis"] = proc
    elif not _redis_answers(redis_port):
        _fail(
            f"redis: pid {_pid_alive('redis')} (from {RUN_DIR / 'redis.pid'}) runs but does not "
            f"answer PING on 127.0.0.1:{redis_port} (REDIS_PORT): a stuck Redis, one started "
            "with another REDIS_PORT, or another process that took its pid; stop it with: "
            "make stop",
            started,
            1,
        )
    for name in SERVICES:
        env = service_env(
            name,
            port=ports[name],
            metrics_port=None,
            index_dir=os.environ.get("RETRIEVAL_INDEX_DIR", index_dir),
            redis_url=redis_url,
            retrieval_addr=os.environ.get("SYNTHESIS_RETRIEVAL_ADDR", loopback(ports["retrieval"])),
            validator_addr=os.environ.get("SYNTHESIS_VALIDATOR_ADDR", loopback(ports["validator"])),
        )
        if proc := _spawn(name, _service_argv(name), {**base_env, **env}):
            started[name] = proc
    for name in SERVICES:
        address = loopback(ports[name])
        proc = started.get(name)
        try:
            wait_serving(
                name,
                address,
                timeout_s,
                exited=_exited(proc) if proc else _gone(name),
                log=_log(name),
            )
        except StackError as error:
            # A service's configuration error exits 2; so does this command then.
            returncode = proc.poll() if proc else None
            _fail(str(error), started, 2 if returncode == 2 else 1)
        print(f"{name}: SERVING on {address}")
    if "retrieval" not in started and (
        stale := _stale_index(
            os.environ.get("RETRIEVAL_INDEX_DIR", index_dir), loopback(ports["retrieval"])
        )
    ):
        print(stale, file=sys.stderr)
    redis = started.get("redis")
    if redis is not None and redis.poll() is not None:
        log = _log("redis")
        _fail(f"redis exited during start-up{last_line(log)}; see {log}", started, 1)
    _wait_answering(timeout_s)


def _stale_index(index_dir: str, address: str) -> str | None:
    """A warning when the retrieval already running at ``address`` serves another index than
    ``index_dir`` holds now (rebuilt since it started: ``make index`` after a corpus change);
    None when they agree, or when either cannot be read. ``up`` leaves a running service alone,
    so without this it went on answering from the old index, saying only "already running"."""
    from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
    from grounded.retrieval.v1 import retrieval_service_pb2_grpc as rpb_grpc

    from services.retrieval.store import Manifest

    manifest = Path(index_dir) / "manifest.json"
    try:
        wanted = Manifest.from_json(manifest.read_text()).index_version
    except (OSError, ValueError, TypeError):
        return None
    with grpc.insecure_channel(address) as channel:
        try:
            reply = rpb_grpc.RetrievalServiceStub(channel).ListDocuments(
                rpb.ListDocumentsRequest(page_size=1), timeout=10
            )
        except grpc.RpcError:
            return None
    if reply.index_version == wanted:
        return None
    return (
        f"stack: WARNING: the retrieval already running serves index {reply.index_version}, "
        f"but {manifest} is index {wanted} (another index, or rebuilt since it started): answers come from "
        "the old index until retrieval restarts: make stop && make run"
    )


def _wait_answering(timeout_s: float) -> None:
    """Until one SynthesizeAnswer goes through end to end (answered or refused, not an error).

    SERVING says each process is up; a dependency that was just restarted can still be
    unreachable from synthesis for a moment, and the demo call after `up` must not fail then.
    """
    from grounded.synthesis.v1 import synthesis_service_pb2 as spb
    from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc

    deadline = time.monotonic() + timeout_s
    last = ""
    with grpc.insecure_channel(loopback(_port("synthesis"))) as channel:
        stub = spb_grpc.SynthesisServiceStub(channel)
        request = spb.SynthesizeAnswerRequest(question="What is theft?")
        while time.monotonic() < deadline:
            try:
                stub.SynthesizeAnswer(request, timeout=10)
                print("stack: answering")
                return
            except grpc.RpcError as error:
                last = f"{error.code().name}: {error.details()}"
            time.sleep(0.5)
    sys.exit(
        f"the stack did not answer within {timeout_s:.0f}s (last error {last}); see {LOG_DIR};"
        " stop it with: make stop"
    )


def down() -> None:
    for name in [*reversed(SERVICES), "redis"]:
        pid = _pid_alive(name)
        if pid is None:
            print(f"{name}: not running")
            continue
        terminate(pid, exited=_gone(name), timeout_s=15.0)
        (RUN_DIR / f"{name}.pid").unlink(missing_ok=True)
        print(f"{name}: stopped")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m stack", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="start Redis and the three services, wait until SERVING")
    p_up.add_argument("--index-dir", default="var/index")
    p_up.add_argument("--timeout", type=float, default=180.0)
    sub.add_parser("down", help="stop everything started by up")
    args = parser.parse_args()
    try:
        if args.command == "up":
            up(args.index_dir, args.timeout)
        else:
            down()
    except SettingError as error:
        exit_on_setting_error("stack", error, json_line=False)

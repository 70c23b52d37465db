"""A bad setting stops a real service process at start-up, before it listens: exit status 2 and
a last line on stderr that names the setting, the value and what it accepts (a ConfigMap typo
shows in `kubectl logs` of the crash-looping pod, instead of a default nobody asked for)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from stack.wiring import OFFLINE_ENV
from tests.support.certs import make_certs

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def start(service: str, settings: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **OFFLINE_ENV, f"{service.upper()}_METRICS_PORT": "0", **settings}
    return subprocess.run(
        [sys.executable, "-m", f"services.{service}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("service", "settings", "line"),
    [
        (
            "validator",
            {"VALIDATOR_PORT": "5OO53"},
            "validator: configuration error: VALIDATOR_PORT='5OO53': "
            "expected an integer from 0 to 65535",
        ),
        (
            "synthesis",
            {"SYNTHESIS_GENERATOR": "gpt-4o"},
            "synthesis: configuration error: SYNTHESIS_GENERATOR='gpt-4o': "
            "expected one of extractive, openai",
        ),
        (
            "retrieval",
            {"RETRIEVAL_CACHE_TTL_S": "1d"},
            "retrieval: configuration error: RETRIEVAL_CACHE_TTL_S='1d': expected an integer",
        ),
        (
            "synthesis",
            {"SYNTHESIS_TLS_CERT_FILE": "/etc/tls/tls.crt"},
            "synthesis: configuration error: SYNTHESIS_TLS_CERT_FILE and SYNTHESIS_TLS_KEY_FILE "
            "must be set together",
        ),
        (
            "validator",
            {"VALIDATOR_JUDGE_BAND_LOW": "0.95"},
            "validator: configuration error: VALIDATOR_JUDGE_BAND_LOW=0.95 is above "
            "VALIDATOR_JUDGE_BAND_HIGH=0.9",
        ),
        (
            "validator",
            {
                "VALIDATOR_JUDGE_BASE_URL": "http://127.0.0.1:9/v1",
                "VALIDATOR_JUDGE_MODEL": "checker-7b",
                "VALIDATOR_JUDGE_CACHE_URL": "redis://127.0.0.1:6379/0",
            },
            "validator: configuration error: VALIDATOR_JUDGE_CACHE_KEY must be set when "
            "VALIDATOR_JUDGE_CACHE_URL is set",
        ),
        (
            "synthesis",
            {"SYNTHESIS_RETRIEVAL_ADDR": "http://127.0.0.1:51051"},
            "synthesis: configuration error: SYNTHESIS_RETRIEVAL_ADDR='http://127.0.0.1:51051': "
            "http:// is not a gRPC name-resolver scheme (write '127.0.0.1:51051'",
        ),
        (
            "retrieval",
            {"RETRIEVAL_REDIS_URL": "htp://x"},
            "retrieval: configuration error: RETRIEVAL_REDIS_URL='htp://x': the scheme is not "
            "redis://, rediss:// or unix://",
        ),
        (
            "validator",
            {"VALIDATOR_HOST": "not a host"},
            "validator: configuration error: VALIDATOR_HOST='not a host': expected an IP address",
        ),
    ],
    ids=[
        "port",
        "choice",
        "integer",
        "half-tls",
        "judge-band",
        "unsigned-judge-cache",
        "url-as-grpc-target",
        "redis-url",
        "host",
    ],
)
def test_a_bad_setting_stops_start_up_naming_it(
    service: str, settings: dict[str, str], line: str
) -> None:
    result = start(service, settings)
    assert result.returncode == 2, result.stderr
    *_, logged, last = result.stderr.strip().splitlines()
    assert last.startswith(line)
    # The same message as a JSON line just before it, for pipelines that keep JSON lines only.
    record = json.loads(logged)
    assert (record["level"], record["service"], record["msg"]) == ("CRITICAL", service, last)


def test_a_port_in_use_stops_start_up_naming_the_settings() -> None:
    """gRPC says only "Failed to bind" (a C-core line, exit 1 before); the service names the
    settings that chose the address and why it cannot be had, exit status 2."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = start("validator", {"VALIDATOR_HOST": "127.0.0.1", "VALIDATOR_PORT": str(port)})
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"validator: configuration error: VALIDATOR_HOST='127.0.0.1' / VALIDATOR_PORT={port}: "
        f"cannot listen on 127.0.0.1:{port}: Address already in use"
    )


def test_a_key_that_is_not_the_certificates_stops_start_up_naming_the_tls_settings(
    tmp_path: Path,
) -> None:
    """gRPC says "Failed to bind" for TLS files it refuses too; before, the service named
    VALIDATOR_HOST / VALIDATOR_PORT, whose address was free."""
    certs = make_certs(tmp_path)
    settings = {
        "VALIDATOR_HOST": "127.0.0.1",
        "VALIDATOR_PORT": "0",
        "VALIDATOR_TLS_CERT_FILE": str(certs.server_cert),
        "VALIDATOR_TLS_KEY_FILE": str(certs.rogue_key),
    }
    result = start("validator", settings)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"validator: configuration error: VALIDATOR_TLS_KEY_FILE={str(certs.rogue_key)!r}: the "
        f"key is not the key of VALIDATOR_TLS_CERT_FILE={str(certs.server_cert)!r}"
    )


def test_settings_that_rule_each_other_out_stop_retrieval_at_warm_up() -> None:
    """Checked while the server warms up (it loads the models then), after logging has begun:
    still exit status 2 and the same last line."""
    result = start(
        "retrieval",
        {
            "RETRIEVAL_PORT": "0",
            "RETRIEVAL_RERANK_MODEL_DIR": str(ROOT / "models" / "answerability-minilm-l6"),
            "RETRIEVAL_CROSS_ENCODER_PATH": "/models/ce",
        },
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "retrieval: configuration error: RETRIEVAL_RERANK_MODEL_DIR and "
        "RETRIEVAL_CROSS_ENCODER_PATH: set one, not both"
    )


@pytest.mark.parametrize(
    ("service", "setting"),
    [
        ("validator", "VALIDATOR_ENTAILMENT_MODEL_DIR"),
        ("synthesis", "SYNTHESIS_ANSWERABILITY_MODEL_DIR"),
        ("synthesis", "SYNTHESIS_STATEMENT_MODEL_DIR"),
    ],
)
def test_a_model_that_cannot_load_stops_start_up_in_json_lines(
    service: str, setting: str, tmp_path: Path
) -> None:
    """Exit status 1 (the pod restarts; never a silent fallback), and stderr stays JSON lines
    a log collector can parse: the service's line saying what to do, then one line whose
    ``exc`` field holds the traceback (raw traceback lines used to follow). Both name the
    setting that chose the model, and the last line's message says the cause, where
    `kubectl logs | tail -1` and `python -m stack up` show it."""
    result = start(service, {f"{service.upper()}_PORT": "0", setting: str(tmp_path)})
    assert result.returncode == 1, result.stderr
    records = [json.loads(line) for line in result.stderr.strip().splitlines()]
    unavailable = [r for r in records if r["level"] == "ERROR" and "unavailable" in r["msg"]]
    assert len(unavailable) == 1
    cause = f"{setting}={tmp_path}: cannot read the model manifest {tmp_path}/manifest.json"
    assert cause in unavailable[0]["msg"]
    assert f"set {service.upper()}_" in unavailable[0]["msg"]  # the way to run without it
    assert records[-1]["level"] == "CRITICAL"
    assert records[-1]["msg"].startswith(f"{service} stopped: {cause}")
    assert "ModelUnavailableError" in records[-1]["exc"]

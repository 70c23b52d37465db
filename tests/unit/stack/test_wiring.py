"""free_port: a loopback port that is free now, drawn below the kernel's ephemeral range."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from stack import wiring


def test_free_port_is_bindable_and_below_the_ephemeral_range() -> None:
    low = wiring._ephemeral_low()
    for _ in range(20):
        port = wiring.free_port()
        if low - 1 > wiring._DRAW_FROM:
            assert wiring._DRAW_FROM <= port < low
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_free_port_skips_a_port_in_use(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        draws = iter([taken, taken, 0])
        monkeypatch.setattr(wiring, "_DRAW_FROM", 1024)
        monkeypatch.setattr(wiring, "_ephemeral_low", lambda: 65536)

        class Draw:
            def randint(self, a: int, b: int) -> int:
                value = next(draws)
                return value if value else b

        monkeypatch.setattr(wiring.random, "SystemRandom", Draw)
        port = wiring.free_port()
        assert port != taken


def test_last_line_shows_a_json_lines_message_not_its_traceback(tmp_path: Path) -> None:
    """A service's last words are a JSON line whose traceback (``exc``) came first in the
    500 characters shown; the message says the cause (``retrieval stopped: ...``)."""
    log = tmp_path / "retrieval.log"
    record = {
        "ts": "2026-11-27T00:00:00.000Z",
        "level": "CRITICAL",
        "service": "retrieval",
        "logger": "services.common.server",
        "msg": "retrieval stopped: the index at /x is missing manifest.json",
        "exc": "Traceback (most recent call last):\n" + "  File ...\n" * 100,
    }
    log.write_text('{"msg": "listening"}\n' + json.dumps(record) + "\n")
    assert wiring.last_line(log) == ": retrieval stopped: the index at /x is missing manifest.json"


def test_last_line_shows_a_plain_line_as_written(tmp_path: Path) -> None:
    log = tmp_path / "redis.log"
    log.write_text("1:M 27 Nov 2026 # Warning: no config file specified\n" + "x" * 900 + "\n")
    assert wiring.last_line(log) == ": " + "x" * 500
    assert wiring.last_line(tmp_path / "absent.log") == ""

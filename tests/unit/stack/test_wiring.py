"""free_port: a loopback port that is free now, drawn below the kernel's ephemeral range."""

from __future__ import annotations

import socket

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

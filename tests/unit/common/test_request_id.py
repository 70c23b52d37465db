"""The x-request-id a call runs under: the caller's when gRPC can send it back and on, else new."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from services.common import interceptors
from services.common.logs import request_id_var


class _Context:
    """What ``_rpc`` reads and writes of a servicer context on a call that succeeds."""

    def __init__(self, metadata: tuple[tuple[str, Any], ...]) -> None:
        self._metadata = metadata
        self.sent: tuple[tuple[str, str], ...] = ()

    def invocation_metadata(self) -> tuple[tuple[str, Any], ...]:
        return self._metadata

    async def send_initial_metadata(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self.sent = metadata


async def _run(metadata: tuple[tuple[str, Any], ...]) -> tuple[str, str]:
    """The id the call ran under (as logged) and the one sent back in its headers."""
    context = _Context(metadata)
    async with interceptors._rpc("test", "Method", context):  # type: ignore[arg-type]
        seen = request_id_var.get()
    ((key, echoed),) = context.sent
    assert key == interceptors.REQUEST_ID_KEY
    return seen, echoed


def _is_generated(request_id: str) -> bool:
    return len(request_id) == 32 and all(c in "0123456789abcdef" for c in request_id)


class TestRequestIdRule:
    @pytest.mark.parametrize(
        "value", ["req-1", " ", "~" * 128, "a b/c:d=e", "0123456789abcdef0123456789abcdef"]
    )
    def test_printable_ascii_up_to_128_characters_is_kept(self, value: str) -> None:
        assert interceptors.request_id_problem(value) == ""

    @pytest.mark.parametrize(
        ("value", "why"),
        [
            ("café", "holds '\\xe9' at 3"),
            ("id\x7f", "holds '\\x7f' at 2"),
            ("tab\there", "holds '\\t' at 3"),
            ("x" * 129, "129 characters long, over 128"),
            ("", "empty"),
            (b"raw", "not text"),
        ],
    )
    def test_anything_else_is_refused_with_the_reason(self, value: object, why: str) -> None:
        assert why in interceptors.request_id_problem(value)


class TestRequestIdOfACall:
    async def test_the_callers_id_is_echoed_and_run_under(self) -> None:
        assert await _run(((interceptors.REQUEST_ID_KEY, "abc-123"),)) == ("abc-123", "abc-123")

    async def test_a_call_without_an_id_gets_a_new_one(self) -> None:
        seen, echoed = await _run((("other", "x"),))
        assert seen == echoed and _is_generated(echoed)

    @pytest.mark.parametrize("value", ["café", "id-" + "9" * 200, "line\nbreak"])
    async def test_an_id_grpc_could_not_send_back_is_replaced_and_the_swap_logged(
        self, value: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.INFO, logger=interceptors.__name__):
            seen, echoed = await _run(((interceptors.REQUEST_ID_KEY, value),))

        assert seen == echoed and _is_generated(echoed)
        (line,) = [r for r in caplog.records if "x-request-id" in r.getMessage()]
        assert line.levelno == logging.INFO
        assert ascii(value[:20])[:-1] in line.getMessage()  # quoted, escaped
        assert interceptors.request_id_problem(value) in line.getMessage()

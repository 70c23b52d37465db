"""Logs are JSON lines carrying the request id."""

from __future__ import annotations

import json
import logging

import bm25s  # noqa: F401 - imported for its side effect: it sets its logger to DEBUG

from services.common.logs import JsonFormatter, configure_logging, request_id_var


class TestJsonFormatter:
    def test_json_formatter_includes_request_id_and_extras(self) -> None:
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello %s", ("world",), None)
        record.method = "RetrievePassages"
        token = request_id_var.set("req-123")
        try:
            line = JsonFormatter("retrieval").format(record)
        finally:
            request_id_var.reset(token)
        payload = json.loads(line)
        assert payload["msg"] == "hello world"
        assert payload["request_id"] == "req-123"
        assert payload["method"] == "RetrievePassages"
        assert payload["service"] == "retrieval"


class TestTraceIds:
    def test_a_line_logged_inside_a_span_carries_its_trace_and_span_ids(self) -> None:
        from opentelemetry.sdk.trace import TracerProvider

        tracer = TracerProvider().get_tracer("test")  # local: the global provider is untouched
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "inside", None, None)
        with tracer.start_as_current_span("work") as span:
            inside = json.loads(JsonFormatter("synthesis").format(record))
            context = span.get_span_context()
        outside = json.loads(JsonFormatter("synthesis").format(record))

        assert inside["trace_id"] == format(context.trace_id, "032x")
        assert inside["span_id"] == format(context.span_id, "016x")
        assert "trace_id" not in outside


def test_chatty_libraries_log_warnings_only() -> None:
    """bm25s sets its own logger to DEBUG on import, so its "Building index from tokens" lines
    reached a service's INFO log; configure_logging keeps its warnings only."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        configure_logging("retrieval", "INFO")
        assert not logging.getLogger("bm25s").isEnabledFor(logging.INFO)
        assert logging.getLogger("bm25s").isEnabledFor(logging.WARNING)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)

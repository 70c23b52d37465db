"""Logs are JSON lines carrying the request id."""

from __future__ import annotations

import json
import logging

from services.common.logs import JsonFormatter, request_id_var


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

"""JSON logging with a per-request id carried in a ContextVar; configured once per process."""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
from typing import Any

from opentelemetry import trace

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")

# Attributes every LogRecord has; anything else was passed through `extra=` and is logged as a field.
_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys()
    | {"message", "asctime", "taskName"}
)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id, extras."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        request_id = request_id_var.get()
        if request_id:
            payload["request_id"] = request_id
        span = trace.get_current_span().get_span_context()
        if span.is_valid:  # tracing on: the line joins its trace in the tracing backend
            payload["trace_id"] = format(span.trace_id, "032x")
            payload["span_id"] = format(span.span_id, "016x")
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str, ensure_ascii=False)


def configure_logging(service: str, level: str = "INFO") -> None:
    """Route the root logger to stderr as JSON lines (idempotent)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_grounded", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service))
    handler._grounded = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    # Third-party libraries are chatty at INFO (model loading, HTTP); keep their warnings only.
    # bm25s sets its own logger to DEBUG on import, so it logs index building whatever the level.
    for noisy in (
        "bm25s",
        "httpx",
        "httpx2",
        "openai",
        "sentence_transformers",
        "urllib3",
        "faiss",
    ):
        logging.getLogger(noisy).setLevel(logging.WARNING)

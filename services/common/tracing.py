"""OpenTelemetry tracing: one trace per question across synthesis, retrieval and validator.

Off by default. ``OTEL_TRACES_EXPORTER=otlp`` (or ``console``) switches it on; everything else
comes from the standard variables the SDK reads itself: ``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_SERVICE_NAME`` (default ``grounded-<service>``),
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``, ``OTEL_SDK_DISABLED``... The maintained
gRPC instrumentation makes a server span per RPC and a client span per outbound call, and
carries the W3C trace context in gRPC metadata (``traceparent``), so a question's spans share one
trace id. Stage spans (retrieval stages, sufficiency, answerability, generation, validation)
come from ``stage_span`` in the domain code, through the OpenTelemetry API alone, which does
nothing when no SDK provider is installed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace

logger = logging.getLogger(__name__)

_EXPORTERS = ("otlp", "console")


def tracing_requested(environ: Mapping[str, str] | None = None) -> bool:
    """True when the environment asks for traces (an exporter named, the SDK not disabled)."""
    env = os.environ if environ is None else environ
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    disabled = env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
    return exporter not in ("", "none") and not disabled


def configure_tracing(
    service: str, *, exporter: Any = None, environ: Mapping[str, str] | None = None
) -> bool:
    """Install the SDK's TracerProvider once per process when asked; True when tracing is on.

    ``exporter`` (a SpanExporter) overrides the environment: tests pass an in-memory one.
    """
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    env = os.environ if environ is None else environ
    if isinstance(trace.get_tracer_provider(), TracerProvider):
        return True  # one provider per process (in-process test stacks share it)
    if exporter is None and not tracing_requested(env):
        return False
    name = env.get("OTEL_SERVICE_NAME") or f"grounded-{service}"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        kind = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
        if kind not in _EXPORTERS:
            logger.warning("unknown OTEL_TRACES_EXPORTER, tracing off", extra={"exporter": kind})
            return False
        if kind == "otlp":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        else:
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)
    logger.info("tracing on", extra={"otel_service_name": name})
    return True


def tracing_active() -> bool:
    """True when an SDK provider is installed (spans are recorded and exported)."""
    from opentelemetry.sdk.trace import TracerProvider

    return isinstance(trace.get_tracer_provider(), TracerProvider)


def server_interceptors() -> list[Any]:
    """The gRPC instrumentation's aio server interceptor, when tracing is on."""
    if not tracing_active():
        return []
    from opentelemetry.instrumentation.grpc import aio_server_interceptor
    from opentelemetry.instrumentation.grpc.filters import health_check, negate

    # No span for a health check (a probe every few seconds would be most of the traces).
    return [aio_server_interceptor(filter_=negate(health_check()))]  # type: ignore[no-untyped-call]


def client_interceptors() -> list[Any]:
    """The gRPC instrumentation's aio client interceptors, when tracing is on."""
    if not tracing_active():
        return []
    from opentelemetry.instrumentation.grpc import aio_client_interceptors

    return list(aio_client_interceptors())  # type: ignore[no-untyped-call]


def current_trace_id() -> str:
    """The current span's trace id as 32 hex digits, "" outside a recorded span."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else ""


@contextmanager
def stage_span(name: str, **attributes: str | int | float | bool) -> Iterator[None]:
    """A child span for one stage of a request (a no-op without an SDK provider)."""
    with trace.get_tracer("grounded").start_as_current_span(name, attributes=attributes):
        yield


def annotate(**attributes: str | int | float | bool) -> None:
    """Set attributes on the current span (a no-op without one)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes(attributes)

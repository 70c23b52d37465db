"""Run one question through an in-process stack with tracing on; print its spans as JSON lines.

Used by tests/integration/test_tracing.py in a subprocess, so that the process-wide tracer
provider it installs never leaks into other tests. ``python -m tests.support.trace_probe INDEX``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grpc import aio
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.common.tracing import configure_tracing
from stack.inprocess import start_in_process


async def main(index_dir: Path) -> None:
    exporter = InMemorySpanExporter()
    assert configure_tracing("probe", exporter=exporter)
    stack = await start_in_process(index_dir)
    try:
        async with aio.insecure_channel(stack.synthesis) as channel:
            stub = spb_grpc.SynthesisServiceStub(channel)
            request = spb.SynthesizeAnswerRequest(question="What is the punishment for theft?")
            response = await stub.SynthesizeAnswer(
                request, timeout=30, metadata=(("x-request-id", "trace-probe-1"),)
            )
            events = [e async for e in stub.StreamAnswer(request, timeout=30)]
    finally:
        await stack.stop()
    streamed = events[-1].finished.response.status if events else 0
    print(
        json.dumps(
            {
                "status": spb.AnswerStatus.Name(response.status),
                "stream_status": spb.AnswerStatus.Name(streamed),
                "stream_events": [e.WhichOneof("event") for e in events],
            }
        )
    )
    for span in exporter.get_finished_spans():
        context = span.get_span_context()
        print(
            json.dumps(
                {
                    "name": span.name,
                    "trace_id": format(context.trace_id, "032x") if context else "",
                    "span_id": format(context.span_id, "016x") if context else "",
                    "parent": format(span.parent.span_id, "016x") if span.parent else "",
                    "kind": span.kind.name,
                    "attributes": {k: str(v) for k, v in (span.attributes or {}).items()},
                }
            )
        )


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))

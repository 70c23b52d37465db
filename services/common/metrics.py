"""Prometheus metrics shared by the services, and the HTTP endpoint that exposes them."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from prometheus_client import (
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    start_http_server,
)

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

from services import __version__

logger = logging.getLogger(__name__)

# No ``*_created`` series beside each counter and histogram: nothing reads them (no alert,
# dashboard or test), and each added a series per label set of every counter and
# histogram to /metrics.
disable_created_metrics()  # type: ignore[no-untyped-call]  # untyped library

# Seconds, from half a millisecond to a minute. One SynthesizeAnswer may wait up to
# SynthesisConfig.slowest_answer_s on its dependencies: 15 s with the default limits, 35 s with
# the OpenAI generator (its 20 s timeout), so the buckets reach past it and its p99 can be read.
# A StreamAnswer is not bounded by that; one longer than a minute counts only in +Inf.
SECONDS_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1, 2.5, 5, 10, 15, 20, 30, 45, 60,
)  # fmt: skip

RPC_REQUESTS = Counter(
    "grounded_rpc_requests_total",
    'RPCs handled, by method, status code and the error\'s ErrorInfo reason ("" for OK and '
    "for statuses gRPC set itself: a deadline it cancelled the call at, a cancelled call; the "
    "caller's deadline found spent by the service's own code is DEADLINE_EXCEEDED).",
    ["service", "method", "code", "reason"],
)
SERVING_STATE = Gauge(
    "grounded_serving",
    "1 while this process's gRPC health reports SERVING (warmed up, not draining, no shipped "
    "model failed); 0 otherwise.",
    ["service"],
)
RPC_LATENCY = Histogram(
    "grounded_rpc_latency_seconds",
    "RPC handling time.",
    ["service", "method"],
    buckets=SECONDS_BUCKETS,
)
STAGE_SECONDS = Histogram(
    "grounded_stage_seconds",
    "Time per pipeline stage of one request, as the response's stage timings report it: "
    "retrieval's search stages, synthesis's steps; the validator's tiers (rules, entailment, "
    "judge). A fixed set of stage names per service.",
    ["service", "stage"],
    # Some stages (fusion, aggregation, sufficiency) take a tenth of a millisecond.
    buckets=(0.0001, 0.00025, *SECONDS_BUCKETS),
)
BUILD_INFO = Gauge(
    "grounded_build_info",
    "1 for what a warmed-up process serves: package version, source revision of its image, "
    "the shipped models it loaded (names, comma-separated) and, for retrieval, the index "
    "version.",
    ["service", "version", "revision", "models", "index_version"],
)
CACHE_EVENTS = Counter(
    "grounded_retrieval_cache_events_total",
    "Retrieval cache lookups by outcome: hit, miss, bypass (Redis unavailable), error.",
    ["outcome"],
)
REFUSALS = Counter(
    "grounded_synthesis_refusals_total",
    "Refusals by reason (the response's refusal_code) and, for a refusal on insufficient "
    'evidence, the sufficiency requirement that failed ("" otherwise).',
    ["reason", "requirement"],
)
VALIDATION_FAILURES = Counter(
    "grounded_validation_failures_total", "Failed validations by rule (reason code).", ["reason"]
)
VALIDATED_SENTENCES = Counter(
    "grounded_validator_sentences_total",
    "Answer sentences judged, by the tier that decided them and the sentence verdict.",
    ["tier", "verdict"],
)
MODEL_CACHE = Counter(
    "grounded_model_cache_total",
    "Passage scorings a model served from its in-process cache (hit) or computed (miss).",
    ["model", "result"],
)
MODEL_FAILURES = Counter(
    "grounded_model_failures_total",
    "Requests a shipped model failed on (the service then stops serving).",
    ["model"],
)


def serve_metrics(port: int, host: str = "127.0.0.1") -> WSGIServer | None:
    """Expose /metrics over HTTP on ``host`` (bare, as ``::`` or ``0.0.0.0``); port 0 or below
    disables it. Returns the server (None when off or not started), which ``shutdown()`` stops.

    ``::`` serves IPv4 too where the node allows it (Linux's default
    ``net.ipv6.bindv6only=0``); ``0.0.0.0`` serves IPv4 only."""
    if port <= 0:
        return None
    try:
        server, _ = start_http_server(port, addr=host)
    except OSError as exc:
        # A busy metrics port must not take the RPC service down with it.
        logger.warning("metrics endpoint not started", extra={"port": port, "error": str(exc)})
        return None
    return server


_build_labels: dict[str, tuple[str, str, str, str, str]] = {}


def revision() -> str:
    """The source revision the image was built from (the Dockerfile's ``REVISION`` build
    argument, as ``GROUNDED_REVISION``); empty outside an image built with it. The package
    version alone does not change between builds."""
    return os.environ.get("GROUNDED_REVISION", "")[:64]


def set_build_info(service: str, *, models: Iterable[str] = (), index_version: str = "") -> None:
    """Publish ``grounded_build_info`` for ``service`` once its warm-up has loaded what it serves.

    ``models``: the names of the models loaded (their manifests' names), in the order given,
    repeats dropped. A second call for the same service (a process warmed up again) replaces the
    series rather than adding one, so one process never reports two builds of a service.
    """
    labels = (service, __version__, revision(), ",".join(dict.fromkeys(models)), index_version)
    previous = _build_labels.get(service)
    if previous is not None and previous != labels:
        BUILD_INFO.remove(*previous)
    _build_labels[service] = labels
    BUILD_INFO.labels(*labels).set(1)


# What a request found, so dashboards show quality drifting, not only latency (issue 15).
_UNIT = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
# A final retrieval score is within 0..1, plus SearchSettings.section_boost (1.0) for a chunk of
# a provision the query names ("section 420"): such a search's best chunk scores 1..2.
TOP_SCORE_BUCKETS = (*_UNIT, 1.1, 1.25, 1.5, 1.75, 1.9, 2.0, 2.5, 3.0)
RETRIEVED_CHUNKS = Histogram(
    "grounded_retrieval_chunks",
    "Chunks returned per RetrievePassages call.",
    buckets=(0, 1, 2, 3, 5, 10, 20, 50, 100, 200),
)
RETRIEVAL_STAGES_SKIPPED = Counter(
    "grounded_retrieval_stages_skipped_total",
    "Requested retrieval stages that did not run, by stage and reason (deadline: the caller's "
    "deadline left less time than the stage usually takes).",
    ["stage", "reason"],
)
RETRIEVAL_TOP_SCORE = Histogram(
    "grounded_retrieval_top_score",
    "Final relevance score of the best chunk per RetrievePassages call (calls with results); "
    "above 1 when the query names a provision.",
    buckets=TOP_SCORE_BUCKETS,
)
SUPPORT_SCORE = Histogram(
    "grounded_validator_support_score",
    "Support score of each validated answer (refusals excluded).",
    buckets=_UNIT,
)

# The judge tier (issue 17): what was escalated, what the judge said, what it cost.
JUDGE_ITEMS = Counter(
    "grounded_judge_items_total",
    "Items escalated to the judge, by task (support, answers) and outcome (yes, no, "
    "unavailable, budget_exhausted); cached verdicts are counted with their outcome too.",
    ["task", "outcome"],
)
JUDGE_CALLS = Counter(
    "grounded_judge_calls_total",
    "Calls to the judge endpoint by result: ok, timeout, error, malformed.",
    ["result"],
)
JUDGE_LATENCY = Histogram(
    "grounded_judge_call_seconds",
    "Time per call to the judge endpoint (every result).",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
JUDGE_TOKENS = Counter(
    "grounded_judge_tokens_total",
    "Tokens the judge endpoint reported using, by kind (prompt, completion).",
    ["kind"],
)
JUDGE_BUDGET_EXHAUSTED = Counter(
    "grounded_judge_budget_exhausted_total",
    "Items refused because a judge budget was spent, by scope (request, process, deadline).",
    ["scope"],
)
JUDGE_CACHE_EVENTS = Counter(
    "grounded_judge_cache_events_total",
    "Judge verdict cache lookups by outcome: hit, miss, bypass (Redis unavailable), error.",
    ["outcome"],
)

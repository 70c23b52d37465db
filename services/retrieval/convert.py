"""Retrieval proto ⇄ domain conversion, with request validation that raises field violations."""

from __future__ import annotations

import math

from grounded.retrieval.v1 import retrieval_service_pb2 as pb

from services.common.errors import Violations
from services.common.passages import INTENT_TO_PROTO, scored_to_proto, timings_to_proto
from services.retrieval.search import (
    DEFAULT_TOP_K,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    SearchRequest,
    SearchResult,
    StageSwitches,
)

MAX_FILTER_VALUES = 100


def request_from_proto(
    request: pb.RetrievePassagesRequest,
    *,
    known_acts: frozenset[str],
    known_doc_ids: frozenset[str],
    default_stages: StageSwitches,
) -> SearchRequest:
    """Validate every field at once, then build the domain request."""
    violations = Violations()
    query = request.query.strip()
    violations.check(bool(query), "query", "must not be empty")
    violations.check(
        len(request.query) <= MAX_QUERY_CHARS,
        "query",
        f"must be at most {MAX_QUERY_CHARS} characters (got {len(request.query)})",
    )
    violations.check(
        0 <= request.top_k <= MAX_TOP_K,
        "top_k",
        f"must be between 1 and {MAX_TOP_K}, or 0 for the default {DEFAULT_TOP_K} (got {request.top_k})",
    )
    violations.check(
        math.isfinite(request.min_score) and request.min_score >= 0,
        "min_score",
        "must be a finite number ≥ 0",
    )
    acts = tuple(request.filters.acts)
    doc_ids = tuple(request.filters.doc_ids)
    for name, values, known in (("acts", acts, known_acts), ("doc_ids", doc_ids, known_doc_ids)):
        if len(values) > MAX_FILTER_VALUES:
            violations.add(f"filters.{name}", f"must hold at most {MAX_FILTER_VALUES} values")
            continue
        for i, value in enumerate(values):
            if value not in known:
                hint = f"; known acts: {', '.join(sorted(known))}" if name == "acts" else ""
                violations.add(f"filters.{name}[{i}]", f"unknown value {value!r}{hint}")
    s = request.stages
    stages = StageSwitches(
        **{
            name: getattr(s, name) if s.HasField(name) else getattr(default_stages, name)
            for name in ("dense", "lexical", "expansion", "rerank", "aggregation", "cache")
        }
    )
    violations.check(
        stages.dense or stages.lexical, "stages", "at least one of dense and lexical must run"
    )
    violations.raise_if_any()
    return SearchRequest(
        query=query,
        top_k=request.top_k or DEFAULT_TOP_K,
        acts=acts,
        doc_ids=doc_ids,
        stages=stages,
        min_score=request.min_score,
    )


def result_to_proto(result: SearchResult) -> pb.RetrievePassagesResponse:
    return pb.RetrievePassagesResponse(
        passages=[scored_to_proto(c) for c in result.chunks],
        cache_hit=result.cache_hit,
        intent=INTENT_TO_PROTO[result.intent],
        expanded_queries=result.expanded_queries,
        timings=timings_to_proto((t.stage, t.ran, t.duration_ms) for t in result.timings),
        index_version=result.index_version,
    )

"""Retrieval proto ⇄ domain conversion, with request validation that raises field violations."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from grounded.retrieval.v1 import retrieval_service_pb2 as pb

from services.common.documents import (
    MAX_LIST_ACTS,
    list_violations,
    require_doc_id,
    require_list,
)
from services.common.errors import MessageTooLargeError, Violations, shown, top_k_rule
from services.common.evidence import MAX_ID_CHARS, Chunk
from services.common.float32 import decimal_from_float32
from services.common.passages import (
    INTENT_TO_PROTO,
    document_to_proto,
    scored_to_proto,
    timings_to_proto,
)
from services.retrieval.documents import DocumentPage
from services.retrieval.limits import DEFAULT_TOP_K, MAX_FILTER_VALUES, MAX_TOP_K
from services.retrieval.search import (
    SearchRequest,
    SearchResult,
    StageSwitches,
    request_violations,
)


def request_from_proto(
    request: pb.RetrievePassagesRequest,
    *,
    known_acts: frozenset[str],
    known_doc_ids: frozenset[str],
    default_stages: StageSwitches,
    meant: Callable[[str], str | None] | None = None,
) -> SearchRequest:
    """Report every violation at once: the request's rules (``request_violations``, stated
    once in the domain) and filter values this index does not know, each with the value it
    may have meant (``meant``: the document id GetDocument would suggest); then build the
    request."""
    s = request.stages
    stages = StageSwitches(
        **{
            name: getattr(s, name) if s.HasField(name) else getattr(default_stages, name)
            for name in ("dense", "lexical", "expansion", "rerank", "aggregation", "cache")
        }
    )
    # top_k 0 is the wire's "unset": the default.
    top_k = request.top_k or DEFAULT_TOP_K
    acts = tuple(request.filters.acts)
    doc_ids = tuple(request.filters.doc_ids)
    # The decimal the client wrote, not its float32 (0.3, not 0.30000001192092896).
    min_score = decimal_from_float32(request.min_score)
    violations = Violations()
    for violation in request_violations(request.query, top_k, min_score, stages, acts, doc_ids):
        if violation.field == "top_k":  # stated as the wire has it: 0 is the default here
            violations.add("top_k", top_k_rule(MAX_TOP_K, request.top_k))
        else:
            violations.add(violation.field, violation.description)
    for name, values, known in (("acts", acts, known_acts), ("doc_ids", doc_ids, known_doc_ids)):
        if len(values) > MAX_FILTER_VALUES:
            continue  # already reported as too many
        for i, value in enumerate(values):
            if value not in known and len(value) <= MAX_ID_CHARS:  # else: reported as too long
                hint = (
                    _act_hint(value, known_acts)
                    if name == "acts"
                    else _doc_hint(meant(value) if meant else None)
                )
                violations.add(f"filters.{name}[{i}]", f"unknown value {shown(value)}{hint}")
    violations.raise_if_any()
    return SearchRequest(
        query=request.query.strip(),
        top_k=top_k,
        acts=acts,
        doc_ids=doc_ids,
        stages=stages,
        min_score=min_score,
    )


def result_to_proto(
    result: SearchResult, unknown_terms: Sequence[str] = ()
) -> pb.RetrievePassagesResponse:
    return pb.RetrievePassagesResponse(
        passages=[scored_to_proto(c) for c in result.chunks],
        cache_hit=result.cache_hit,
        intent=INTENT_TO_PROTO[result.intent],
        expanded_queries=result.expanded_queries,
        timings=timings_to_proto(
            ((t.stage, t.ran, t.duration_ms) for t in result.timings),
            {t.stage: t.skipped for t in result.timings if t.skipped is not None},
        ),
        index_version=result.index_version,
        unknown_terms=list(unknown_terms),
    )


def doc_id_from_proto(request: pb.GetDocumentRequest) -> str:
    """The requested doc_id, exactly as sent; empty or too long is INVALID_ARGUMENT."""
    return require_doc_id(request.doc_id)


def document_response(
    chunks: Sequence[Chunk], index_version: str, *, max_bytes: int
) -> pb.GetDocumentResponse:
    """The document whole, or ``MessageTooLargeError`` when it would not fit one message."""
    response = pb.GetDocumentResponse(
        document=document_to_proto(chunks), index_version=index_version
    )
    size = response.ByteSize()
    if size > max_bytes:
        doc_id = response.document.doc_id
        raise MessageTooLargeError(
            f"document {doc_id!r} is {size:,} bytes whole, over this server's {max_bytes:,}-byte "
            "message limit (RETRIEVAL_MAX_MESSAGE_BYTES); its passages can be retrieved with "
            f"RetrievePassages and filters.doc_ids [{doc_id!r}]",
            metadata={"doc_id": doc_id, "bytes": str(size), "limit": str(max_bytes)},
        )
    return response


def list_from_proto(request: pb.ListDocumentsRequest, *, known_acts: frozenset[str]) -> int:
    """The page size to use; every violation at once (the shared rule, then unknown acts)."""
    acts = list(request.acts)
    violations = Violations()
    for violation in list_violations(request.page_size, acts):
        violations.add(violation.field, violation.description)
    if len(acts) <= MAX_LIST_ACTS:
        for i, act in enumerate(acts):
            if act not in known_acts and len(act) <= MAX_ID_CHARS:  # else: reported as too long
                violations.add(
                    f"acts[{i}]", f"unknown value {shown(act)}{_act_hint(act, known_acts)}"
                )
    violations.raise_if_any()
    return require_list(request.page_size, acts)


def list_response(page: DocumentPage, index_version: str) -> pb.ListDocumentsResponse:
    return pb.ListDocumentsResponse(
        documents=[document_to_proto(chunks, whole=False) for chunks in page.documents],
        next_page_token=page.next_page_token,
        total_size=page.total_size,
        index_version=index_version,
    )


def _act_hint(value: str, known: frozenset[str]) -> str:
    """What an unknown act filter may have meant: the act in another case, else the list."""
    same = [act for act in sorted(known) if act.casefold() == value.strip().casefold()]
    if same:
        return f"; did you mean {same[0]!r}? (acts are exact codes)"
    return f"; known acts: {', '.join(sorted(known)) or 'none (this index has no acts)'}"


def _doc_hint(meant: str | None) -> str:
    return f"; did you mean {meant!r}?" if meant else ""

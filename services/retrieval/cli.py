"""Command-line client for the retrieval service: `python -m services.retrieval.cli search "query"`.

The first step of the chain retrieve → generate → validate: `search --json` prints the
RetrievePassagesResponse, whose ``passages`` the validator CLI reads as evidence
(`python -m services.validator.cli --answer-file A --chunks-file passages.json`).
Exit status: 0 with passages, 1 with none (a --min-score no passage reaches, or filters that match
nothing), 2 on an RPC error (bad input, server down).
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import uuid

import grpc
from google.protobuf import json_format
from grounded.retrieval.v1 import retrieval_service_pb2 as pb
from grounded.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc
from grounded.type.v1 import evidence_pb2

from services.common.cli_errors import print_json, report_rpc_error, run_cli, utf8_argument
from services.common.language.text import counted


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m services.retrieval.cli", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    search = sub.add_parser("search", help="retrieve evidence passages for a query")
    search.add_argument("query", type=utf8_argument)
    search.add_argument("--top-k", type=int, default=0, help="passages (default: server's)")
    search.add_argument(
        "--act", action="append", default=[], type=utf8_argument, help="act code (repeatable)"
    )
    search.add_argument(
        "--doc-id",
        action="append",
        default=[],
        type=utf8_argument,
        help="document id (repeatable)",
    )
    search.add_argument(
        "--min-score",
        type=float,
        default=0.0,
        help="only passages whose final score reaches this (min_score; default 0: all)",
    )
    search.add_argument("--no-rerank", action="store_true", help="switch the rerank stage off")
    search.add_argument("--no-expansion", action="store_true", help="switch expansion off")
    search.add_argument("--json", action="store_true", help="print the full response as JSON")
    search.add_argument(
        "--address",
        default=f"127.0.0.1:{os.environ.get('RETRIEVAL_PORT', '50051')}",
        help="retrieval service address",
    )
    search.add_argument("--timeout", type=float, default=30.0, help="deadline in seconds")
    return parser


def _print_human(response: pb.RetrievePassagesResponse) -> None:
    intent = evidence_pb2.QueryIntent.Name(response.intent).removeprefix("QUERY_INTENT_")
    print(
        f"{counted(len(response.passages), 'passage')} (intent {intent.lower()}, "
        f"{'cache hit' if response.cache_hit else 'computed'}, index {response.index_version})"
    )
    if response.expanded_queries:
        print(f"expanded: {'; '.join(response.expanded_queries)}")
    for rank, p in enumerate(response.passages, start=1):
        where = f"{p.source.act} s.{p.section}" if p.section else p.doc_id
        print(
            f"\n{rank:>2}. [{p.semantic_id}] {where} — {p.title} (score {p.scores.final_score:.3f})"
        )
        print(textwrap.indent(textwrap.fill(p.text, width=92), "    "))
    timings = ", ".join(f"{t.stage} {t.duration_ms:.1f} ms" for t in response.timings if t.ran)
    print(f"\ntimings: {timings}")
    skipped = [
        f"{t.stage} ({_skip_reason(t.skip_reason)})" for t in response.timings if t.skip_reason
    ]
    if skipped:
        print(f"skipped: {', '.join(skipped)}")


def _skip_reason(value: int) -> str:
    """``deadline`` for STAGE_SKIP_REASON_DEADLINE, and so on."""
    name = evidence_pb2.StageSkipReason.Name(value)
    return name.removeprefix("STAGE_SKIP_REASON_").lower().replace("_", " ")


def search(args: argparse.Namespace) -> int:
    request = pb.RetrievePassagesRequest(
        query=args.query, top_k=args.top_k, min_score=args.min_score
    )
    request.filters.acts.extend(args.act)
    request.filters.doc_ids.extend(args.doc_id)
    if args.no_rerank:
        request.stages.rerank = False
    if args.no_expansion:
        request.stages.expansion = False
    with grpc.insecure_channel(args.address) as channel:
        stub = pb_grpc.RetrievalServiceStub(channel)
        try:
            response = stub.RetrievePassages(
                request, timeout=args.timeout, metadata=(("x-request-id", uuid.uuid4().hex),)
            )
        except grpc.RpcError as err:
            return report_rpc_error(err)
    if args.json:
        print_json(json_format.MessageToDict(response))
    else:
        _print_human(response)
    return 0 if response.passages else 1


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return search(args)


if __name__ == "__main__":
    sys.exit(run_cli(main))

"""Command-line client for the synthesis service.

`python -m services.synthesis.cli ask "question"` asks; `python -m services.synthesis.cli
document IPC_420` prints a cited document whole, each passage with its id and offsets;
`documents [--act IPC]` lists what the index holds, a page at a time.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import uuid
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from grounded.synthesis.v1 import synthesis_service_pb2 as pb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as pb_grpc
from grounded.type.v1 import validation_pb2

from services.common.cli_errors import print_json, report_rpc_error, run_cli, utf8_argument
from services.common.language.text import counted

# What a statement's verdict says (SufficiencyReport.statement_verdict): an ANSWERED statement
# is answered with the evidence that decides it, which may contradict it, so the quote alone is
# no confirmation (docs/SYNTHESIS.md, "The statement's verdict").
_STATEMENT_VERDICTS = {
    pb.STATEMENT_VERDICT_STATED: (
        "STATED: the evidence appears to state the claim (right about four times in five when "
        "measured); check the quoted text"
    ),
    pb.STATEMENT_VERDICT_UNDECIDED: (
        "UNDECIDED: the evidence does not surely state the claim and may contradict it; the "
        "quote is what bears on it, not a confirmation"
    ),
}
_NOT_JUDGED = "not judged: the quote is what bears on the claim, not a confirmation"
# How the server read the input (SynthesizeAnswerResponse.input_kind): a claim to check is
# answered with the evidence that decides it, a question with the evidence that answers it.
_INPUT_KINDS = {
    pb.INPUT_KIND_QUESTION: "question",
    pb.INPUT_KIND_STATEMENT: "statement (a claim to check against the evidence)",
}

_GENERATORS = {
    "default": pb.GENERATOR_KIND_UNSPECIFIED,
    "extractive": pb.GENERATOR_KIND_EXTRACTIVE,
    "openai": pb.GENERATOR_KIND_OPENAI,
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m services.synthesis.cli", description=__doc__)
    # What every subcommand takes: where the service is and how long to wait.
    server = argparse.ArgumentParser(add_help=False)
    server.add_argument(
        "--address",
        default=f"127.0.0.1:{os.environ.get('SYNTHESIS_PORT', '50052')}",
        help="synthesis service address",
    )
    server.add_argument("--timeout", type=float, default=30.0, help="deadline in seconds")
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser(
        "ask",
        parents=[server],
        help="ask a question; exit 0 when answered and grounded, 1 otherwise",
    )
    ask.add_argument("question", type=utf8_argument)
    ask.add_argument(
        "--top-k", type=int, default=0, help="evidence passages to retrieve (default: server's)"
    )
    ask.add_argument(
        "--act",
        action="append",
        default=[],
        type=utf8_argument,
        help="restrict to an act code (repeatable)",
    )
    ask.add_argument("--json", action="store_true", help="print the full response as JSON")
    ask.add_argument("--verbose", action="store_true", help="add per-sentence coverage")
    ask.add_argument(
        "--stream",
        action="store_true",
        help="StreamAnswer: print each sentence as soon as it is validated (with --json: one "
        "JSON event per line)",
    )
    ask.add_argument("--generator", choices=sorted(_GENERATORS), default="default")
    ask.add_argument("--model", default="", type=utf8_argument, help="model for --generator openai")
    document = sub.add_parser(
        "document",
        parents=[server],
        help="print a document whole (what citations point into); exit 0 when found, 2 if not",
    )
    document.add_argument("doc_id", type=utf8_argument, help="document id, e.g. IPC_420")
    document.add_argument("--json", action="store_true", help="print the full response as JSON")
    documents = sub.add_parser(
        "documents",
        parents=[server],
        help="list the indexed documents a page at a time (ListDocuments)",
    )
    documents.add_argument(
        "--act", action="append", default=[], type=utf8_argument, help="only this act (repeatable)"
    )
    documents.add_argument("--page-size", type=int, default=0, help="documents per page (50)")
    documents.add_argument(
        "--page-token", default="", type=utf8_argument, help="continue from a previous page"
    )
    documents.add_argument("--json", action="store_true", help="print the full response as JSON")
    return parser


def _print_document(response: pb.GetDocumentResponse) -> None:
    d = response.document
    heading = (
        f"{d.source.act} s.{d.section} — {d.title}" if d.section else f"{d.doc_id} — {d.title}"
    )
    print(heading)
    if d.source.act_name or d.source.chapter:
        chapter = (
            f", chapter {d.source.chapter}: {d.source.chapter_title}" if d.source.chapter else ""
        )
        print(f"  {d.source.act_name or d.source.act}{chapter}")
    if d.source.url:
        print(f"  {d.source.url}")
    if d.source.caveat:
        print(textwrap.indent(textwrap.fill(f"Note: {d.source.caveat}", width=92), "  "))
    print(
        f"  {counted(len(d.passages), 'passage')}, {counted(len(d.text), 'character')}, "
        f"index {response.index_version}"
    )
    for p in d.passages:
        print(f"\n[{p.semantic_id}] characters {p.char_start}-{p.char_end}")
        print(textwrap.indent(textwrap.fill(p.text, width=92), "    "))


def _print_json(message: Message) -> None:
    """A response as protobuf's JSON mapping, indented."""
    print_json(json_format.MessageToDict(message))


def _call(args: argparse.Namespace, method: str, request: Any) -> Any:
    """One unary call of the synthesis service at ``--address`` within ``--timeout``."""
    with grpc.insecure_channel(args.address) as channel:
        stub = pb_grpc.SynthesisServiceStub(channel)
        return getattr(stub, method)(
            request, timeout=args.timeout, metadata=(("x-request-id", uuid.uuid4().hex),)
        )


def documents(args: argparse.Namespace) -> int:
    request = pb.ListDocumentsRequest(
        page_size=args.page_size, page_token=args.page_token, acts=args.act
    )
    try:
        response: pb.ListDocumentsResponse = _call(args, "ListDocuments", request)
    except grpc.RpcError as err:
        return report_rpc_error(err)
    if args.json:
        _print_json(response)
        return 0
    for d in response.documents:
        where = f"{d.source.act} s.{d.section}" if d.section else d.doc_id
        print(f"{d.doc_id:<16} {where:<14} {counted(d.passage_count, 'passage'):>12}  {d.title}")
    shown = len(response.documents)
    print(
        f"\n{shown} of {counted(response.total_size, 'document')}, index {response.index_version}"
    )
    if response.next_page_token:
        print(f"next page: --page-token {response.next_page_token}")
    return 0


def document(args: argparse.Namespace) -> int:
    request = pb.GetDocumentRequest(doc_id=args.doc_id)
    try:
        response: pb.GetDocumentResponse = _call(args, "GetDocument", request)
    except grpc.RpcError as err:
        return report_rpc_error(err)
    if args.json:
        _print_json(response)
    else:
        _print_document(response)
    return 0


def _print_human(response: pb.SynthesizeAnswerResponse, verbose: bool) -> None:
    print("Answer:")
    # A synthesis-mode answer is one group per source, each opened by a heading line.
    for line in response.answer.splitlines():
        print(textwrap.indent(textwrap.fill(line, width=96), "  "))
    if response.citations:
        print("\nCitations:")
        for doc in response.citations:
            act = doc.source.act or doc.doc_id
            chapter = (
                f" (chapter {doc.source.chapter}: {doc.source.chapter_title})"
                if doc.source.chapter
                else ""
            )
            print(
                f"  {act} s.{doc.section} — {doc.title}{chapter}"
                if doc.section
                else f"  {doc.doc_id} — {doc.title}{chapter}"
            )
            if doc.source.url:
                print(f"    {doc.source.url}")
            for c in doc.citations:
                print(f"    [{c.semantic_id}] {c.snippet}")
                print(f"      at {c.locator}, characters {c.char_start}-{c.char_end}")
        # Once per act: what a reader must know about its text in this corpus.
        caveats = {d.source.act_name or d.source.act: d.source.caveat for d in response.citations}
        for name, caveat in caveats.items():
            if caveat:
                print(f"\nNote on the {name}:")
                print(textwrap.indent(textwrap.fill(caveat, width=92), "  "))
    v = response.validation
    s = response.sufficiency
    docs = {p.doc_id for p in response.evidence}
    print("\nVALIDATION")
    print(f"  status:     {pb.AnswerStatus.Name(response.status).removeprefix('ANSWER_STATUS_')}")
    checked = ", ".join(
        pb.SufficiencyRequirement.Name(r).removeprefix("SUFFICIENCY_REQUIREMENT_")
        for r in s.requirements
    )
    failed = pb.SufficiencyRequirement.Name(s.failed_requirement).removeprefix(
        "SUFFICIENCY_REQUIREMENT_"
    )
    detail = checked if s.sufficient else f"{failed}: {s.failure}"
    print(f"  sufficient: {'yes' if s.sufficient else 'no'} ({detail})")
    print(f"  read as:    {_INPUT_KINDS.get(response.input_kind, 'not reported by the server')}")
    if s.statement_verdict in _STATEMENT_VERDICTS:
        print(f"  statement:  {_STATEMENT_VERDICTS[s.statement_verdict]}")
    elif response.input_kind == pb.INPUT_KIND_STATEMENT:
        print(f"  statement:  {_NOT_JUDGED}")
    if s.compared_terms:
        print(f"  compared:   {'; '.join(s.compared_terms)} (each must be supported on its own)")
    if s.parts:
        # Each part needs its own answering sentence (SufficiencyReport.parts; rule X).
        print("  parts:      each needs its own answering sentence")
        for part in s.parts:
            answered = "answered" if part.answered else "NOT answered"
            print(f"    {answered} ({part.score:.2f}): {part.question}")
    verdict = validation_pb2.ValidationVerdict.Name(v.verdict).removeprefix("VALIDATION_VERDICT_")
    print(f"  grounded:   {verdict} (support {v.support_score:.2f})")
    print(
        f"  citations:  {len(v.cited_ids)} cited, {len(v.invalid_citations)} invalid, "
        f"{len(v.missing_citations)} missing"
    )
    print(f"  uncovered:  {', '.join(str(i) for i in v.uncovered_sentences) or 'none'}")
    tiers = ", ".join(
        validation_pb2.ValidationTier.Name(t).removeprefix("VALIDATION_TIER_").lower()
        for t in v.tiers
    )
    model = f" (model {v.entailment_model})" if v.entailment_model else ""
    print(f"  tiers:      {tiers or 'none reported'}{model}")
    index = f", index {response.index_version}" if response.index_version else ""
    print(
        f"  retrieved:  {counted(len(response.evidence), 'passage')} from "
        f"{counted(len(docs), 'document')}{index}"
    )
    if response.synthesis_mode:
        # Evidence documents, not cited ones: the legal audit read "over 3 documents" beside
        # an answer citing one as three sources.
        print(
            "  synthesis:  multi-document mode: evidence from "
            f"{counted(response.source_doc_count, 'document')}, the answer cites "
            f"{counted(len(response.citations), 'document')}"
        )
        for r in response.source_relations:
            kind = pb.SourceRelationKind.Name(r.kind).removeprefix("SOURCE_RELATION_KIND_")
            print(f"    {kind.lower().replace('_', ' ')}: {r.description}")
    if response.refusal_code != pb.REFUSAL_CODE_UNSPECIFIED:
        code = pb.RefusalCode.Name(response.refusal_code).removeprefix("REFUSAL_CODE_")
        print(f"  refusal:    {code}: {response.refusal_reason}")
    if response.HasField("usage"):
        u = response.usage
        print(
            f"  tokens:     {u.total_tokens} ({u.prompt_tokens} prompt + "
            f"{u.completion_tokens} completion, model {u.model})"
        )
    timings = ", ".join(f"{t.stage} {t.duration_ms:.1f} ms" for t in response.timings if t.ran)
    print(f"  timings:    {timings}")
    if verbose:
        print("\nSentences:")
        for sent in v.sentences:
            reason = validation_pb2.ValidationReason.Name(sent.reason).removeprefix(
                "VALIDATION_REASON_"
            )
            print(
                f"  #{sent.index} {reason:<18} coverage {sent.coverage:.2f} cites {list(sent.cited_ids)}"
            )
            if sent.HasField("entailment"):
                e = sent.entailment
                how = (
                    "verbatim quote"
                    if e.verbatim
                    else (f"entailment {e.entailment:.2f}, contradiction {e.contradiction:.2f}")
                )
                print(f"      {how} from {e.semantic_id}[{e.char_start}:{e.char_end}]")


def _stream(
    stub: pb_grpc.SynthesisServiceStub,
    request: pb.SynthesizeAnswerRequest,
    args: argparse.Namespace,
    metadata: tuple[tuple[str, str], ...],
) -> pb.SynthesizeAnswerResponse:
    """Print StreamAnswer's events as they arrive; return the final response.

    Only a final ANSWERED event delivers the sentences printed before it: a stream that ends
    with an error after some were printed delivered none, so (in human mode) they are marked
    withdrawn before the error goes on to ``report_rpc_error``.
    """
    final = pb.SynthesizeAnswerResponse()
    if not args.json:
        print(f"Question: {args.question}\n")
    shown = 0
    try:
        for event in stub.StreamAnswer(request, timeout=args.timeout, metadata=metadata):
            if args.json:
                print_json(json_format.MessageToDict(event), indent=None, flush=True)
            kind = event.WhichOneof("event")
            if kind == "finished":
                final = event.finished.response
                if not args.json:
                    if event.finished.retract:
                        print(f"\n[retracted: the {event.finished.sentences_sent} sentence(s) "
                              "above did not survive the whole-answer check]")  # fmt: skip
                    print()
                    _print_human(final, args.verbose)
            elif kind == "sentence" and not args.json:
                s = event.sentence
                where = ", ".join(c.locator for c in s.citations)
                print(f"  [{s.index}] {s.text}\n      cites {where}", flush=True)
                shown += 1
            elif kind == "evidence" and not args.json:
                e = event.evidence
                print(
                    f"Evidence: {counted(len(e.evidence), 'passage')} from "
                    f"{counted(len(e.doc_ids), 'document')}\n\n"
                    "Validated sentences, as each passes:",
                    flush=True,
                )
    except grpc.RpcError as err:
        if shown:
            print(
                f"\n[withdrawn: the {counted(shown, 'sentence')} above were not delivered: the "
                f"stream ended with {err.code().name} before its final answer]",
                flush=True,
            )
        raise
    return final


def ask(args: argparse.Namespace) -> int:
    request = pb.SynthesizeAnswerRequest(
        question=args.question,
        top_k=args.top_k,
        generator=_GENERATORS[args.generator],
        model=args.model,
    )
    request.filters.acts.extend(args.act)
    metadata = (("x-request-id", uuid.uuid4().hex),)
    with grpc.insecure_channel(args.address) as channel:
        stub = pb_grpc.SynthesisServiceStub(channel)
        try:
            if args.stream:
                response = _stream(stub, request, args, metadata)
            else:
                response = stub.SynthesizeAnswer(request, timeout=args.timeout, metadata=metadata)
        except grpc.RpcError as err:
            return report_rpc_error(err)
    if args.stream:
        pass  # printed as it arrived
    elif args.json:
        _print_json(response)
    else:
        print(f"Question: {args.question}\n")
        _print_human(response, args.verbose)
    answered = response.status == pb.ANSWER_STATUS_ANSWERED
    grounded = response.validation.verdict == validation_pb2.VALIDATION_VERDICT_GROUNDED
    return 0 if answered and grounded and response.sufficiency.sufficient else 1


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    commands = {"document": document, "documents": documents, "ask": ask}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(run_cli(main))

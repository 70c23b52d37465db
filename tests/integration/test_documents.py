"""GetDocument on retrieval and on the synthesis front door: a cited document served whole,
so a client can show a citation in its context (``text[char_start:char_end]``)."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
from grounded.retrieval.v1 import retrieval_service_pb2_grpc as rpb_grpc
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grpc import aio
from grpc_status import rpc_status

from services.common.documents import DOCUMENT_RESOURCE_TYPE
from services.common.evidence import MAX_ID_CHARS
from services.retrieval.corpus import load_statutes
from stack.inprocess import InProcessStack
from tests.integration.conftest import IPC
from tests.support.grpc_helpers import error_reason, field_violations

pytestmark = pytest.mark.integration


def resource_info(error: grpc.RpcError) -> error_details_pb2.ResourceInfo:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    for detail in status.details:
        info = error_details_pb2.ResourceInfo()
        if detail.Unpack(info):
            return info
    raise AssertionError("no ResourceInfo detail")


async def from_retrieval(stack: InProcessStack, doc_id: str) -> rpb.GetDocumentResponse:
    async with aio.insecure_channel(stack.retrieval) as channel:
        stub = rpb_grpc.RetrievalServiceStub(channel)
        return await stub.GetDocument(rpb.GetDocumentRequest(doc_id=doc_id), timeout=30)  # type: ignore[no-any-return]


async def from_synthesis(stack: InProcessStack, doc_id: str) -> spb.GetDocumentResponse:
    async with aio.insecure_channel(stack.synthesis) as channel:
        stub = spb_grpc.SynthesisServiceStub(channel)
        return await stub.GetDocument(spb.GetDocumentRequest(doc_id=doc_id), timeout=30)  # type: ignore[no-any-return]


GET = {"retrieval": from_retrieval, "synthesis": from_synthesis}


@pytest.mark.parametrize("service", sorted(GET))
async def test_a_document_is_served_whole_with_offsets_that_hold(
    stack: InProcessStack, service: str
) -> None:
    source = {d.doc_id: d for d in load_statutes(IPC)}["IPC_375"]
    response = await GET[service](stack, "IPC_375")
    doc = response.document
    assert (doc.doc_id, doc.section, doc.source.act) == ("IPC_375", "375", "IPC")
    assert doc.title == source.title
    assert response.index_version
    assert len(doc.passages) > 5
    assert [p.sentence_index for p in doc.passages] == list(range(len(doc.passages)))
    assert [p.semantic_id for p in doc.passages] == [
        f"IPC_375_{i}" for i in range(len(doc.passages))
    ]
    # Offsets count Unicode code points: s.375 quotes "rape" in curly quotes (U+201C/U+201D)
    # before its later passages, so byte or UTF-16 offsets would miss them.
    assert any(ord(c) > 0x7F for c in doc.text[: doc.passages[1].char_start])
    for p in doc.passages:
        assert doc.text[p.char_start : p.char_end] == p.text
        assert not p.HasField("scores")
        assert not p.context_before and not p.context_after  # the text holds the neighbours
    # The source's text, with only the whitespace between sentences made spaces.
    assert doc.text.split() == source.text.split()
    assert len(doc.text) == len(source.text.rstrip())


async def test_front_door_serves_what_retrieval_serves(stack: InProcessStack) -> None:
    direct = await from_retrieval(stack, "IPC_420")
    proxied = await from_synthesis(stack, "IPC_420")
    assert proxied.document == direct.document
    assert proxied.index_version == direct.index_version


async def test_every_citation_of_an_answer_points_into_its_document(
    stack: InProcessStack,
) -> None:
    async with aio.insecure_channel(stack.synthesis) as channel:
        stub = spb_grpc.SynthesisServiceStub(channel)
        answer = await stub.SynthesizeAnswer(
            spb.SynthesizeAnswerRequest(question="What is the punishment for theft?"),
            timeout=60,
        )
    assert answer.status == spb.ANSWER_STATUS_ANSWERED
    assert answer.citations
    for cited in answer.citations:
        found = await from_synthesis(stack, cited.doc_id)
        # The same index served both, so the offsets hold (a client can check this way).
        assert found.index_version == answer.index_version != ""
        for c in cited.citations:
            assert found.document.text[c.char_start : c.char_end] == c.sentence


@pytest.mark.parametrize("service", sorted(GET))
@pytest.mark.parametrize(
    ("doc_id", "meant"),
    [
        ("IPC_420_0", "IPC_420"),  # a passage id
        ("ipc_420", "IPC_420"),  # another case
        (" IPC_420 ", "IPC_420"),  # spaces
        ("IPC_9999", None),
    ],
)
async def test_an_unknown_id_is_not_found_naming_the_document_meant(
    stack: InProcessStack, service: str, doc_id: str, meant: str | None
) -> None:
    with pytest.raises(aio.AioRpcError) as caught:
        await GET[service](stack, doc_id)
    err = caught.value
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert error_reason(err) == "NOT_FOUND"
    info = resource_info(err)
    assert (info.resource_type, info.resource_name) == (DOCUMENT_RESOURCE_TYPE, doc_id)
    details = err.details() or ""
    assert repr(doc_id) in details
    if meant is None:
        assert "did you mean" not in details
    else:
        assert f"did you mean {meant!r}?" in details


@pytest.mark.parametrize("service", sorted(GET))
@pytest.mark.parametrize(
    ("doc_id", "words"),
    [("", "must not be blank"), ("\u200b \n", "must not be blank"), ("I" * 257, "at most 256")],
)
async def test_a_malformed_id_is_invalid_argument(
    stack: InProcessStack, service: str, doc_id: str, words: str
) -> None:
    assert MAX_ID_CHARS == 256
    with pytest.raises(aio.AioRpcError) as caught:
        await GET[service](stack, doc_id)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert words in field_violations(caught.value)["doc_id"]


async def list_page(
    stack: InProcessStack, service: str, **fields: object
) -> rpb.ListDocumentsResponse | spb.ListDocumentsResponse:
    async with aio.insecure_channel(getattr(stack, service)) as channel:
        if service == "retrieval":
            stub: Any = rpb_grpc.RetrievalServiceStub(channel)
            request: Any = rpb.ListDocumentsRequest(**fields)  # type: ignore[arg-type]
        else:
            stub = spb_grpc.SynthesisServiceStub(channel)
            request = spb.ListDocumentsRequest(**fields)  # type: ignore[arg-type]
        return await stub.ListDocuments(request, timeout=30)  # type: ignore[no-any-return]


@pytest.mark.parametrize("service", sorted(GET))
async def test_the_listing_pages_through_every_indexed_section_once(
    stack: InProcessStack, service: str
) -> None:
    sections = [d.doc_id for d in load_statutes(IPC)]
    listed: list[str] = []
    token, pages = "", 0
    while True:
        page = await list_page(stack, service, page_size=200, page_token=token, acts=["IPC"])
        pages += 1
        listed += [d.doc_id for d in page.documents]
        assert page.total_size == len(sections) and page.index_version
        for d in page.documents:
            assert d.passage_count >= 1 and not d.text and not d.passages
        token = page.next_page_token
        if not token:
            break
    assert listed == sections  # index order is the corpus order
    assert pages == -(-len(sections) // 200)
    # A listed count is the document's: GetDocument gives the passages themselves.
    last_page_first = page.documents[0]
    whole = (await GET[service](stack, last_page_first.doc_id)).document
    assert last_page_first.passage_count == whole.passage_count == len(whole.passages)


@pytest.mark.parametrize("service", sorted(GET))
@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"page_size": 501}, "page_size", "between 0"),
        ({"page_size": -1}, "page_size", "between 0"),
        ({"acts": ["NOPE"]}, "acts[0]", "unknown value 'NOPE'"),
        ({"acts": ["IPC", "A" * 1_000_000]}, "acts[1]", "at most 256 characters (got 1,000,000)"),
        ({"page_token": "not-a-token"}, "page_token", "is not a page token"),
        ({"page_token": "eyJvIjo1LCJhIjpbXSwiaSI6IngifQ"}, "page_token", "was made for index 'x'"),
    ],
)
async def test_a_bad_listing_request_is_invalid_argument(
    stack: InProcessStack, service: str, fields: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(aio.AioRpcError) as caught:
        await list_page(stack, service, **fields)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert words in field_violations(caught.value)[field]

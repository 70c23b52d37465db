"""Documents by id from an index's chunks, and the hint a miss carries."""

from __future__ import annotations

import base64
from typing import Any

import grpc
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from services.common import status
from services.common.documents import DOCUMENT_RESOURCE_TYPE
from services.common.errors import InvalidInputError, MessageTooLargeError, NotFoundError
from services.common.evidence import Chunk
from services.retrieval import convert
from services.retrieval.documents import DocumentIndex
from tests.unit.retrieval.search_fakes import statute_chunks


def chunks(doc_id: str, n: int) -> list[Chunk]:
    return [Chunk(f"{doc_id}_{i}", doc_id, f"Sentence {i}.", sentence_index=i) for i in range(n)]


@pytest.fixture
def index() -> DocumentIndex:
    # Out of order on purpose: the index keeps sentence order.
    return DocumentIndex([*reversed(chunks("IPC_420", 2)), *chunks("IPC_42", 3)])


def test_a_document_is_its_chunks_in_sentence_order(index: DocumentIndex) -> None:
    assert len(index) == 2
    assert [c.semantic_id for c in index.get("IPC_420")] == ["IPC_420_0", "IPC_420_1"]
    assert len(index.get("IPC_42")) == 3


@pytest.mark.parametrize(
    ("asked", "meant"),
    [
        ("IPC_420_1", "IPC_420"),  # a passage of it
        ("IPC_42_2", "IPC_42"),
        ("IPC_420_9", "IPC_420"),  # past its last passage
        ("ipc_420", "IPC_420"),
        (" IPC_42\n", "IPC_42"),
        ("ipc_420_0", "IPC_420"),
        ("IPC_4", None),
        ("IPC_9999_0", None),
        ("420", "IPC_420"),  # a bare section number only one document has
        ("IPC/420", "IPC_420"),  # a citation's locator
        ("IPC 42", "IPC_42"),
        ("IPC_420\x00", "IPC_420"),  # invisible characters around it
        ("\u200bipc_42", "IPC_42"),
        ("IPC/420#1", "IPC_420"),  # the locator a citation carries
        ("IPC\u00a0420", "IPC_420"),  # any space between act and section
        ("IPC\t42", "IPC_42"),
        ("9", None),
    ],
)
def test_a_miss_names_the_document_meant(
    index: DocumentIndex, asked: str, meant: str | None
) -> None:
    with pytest.raises(NotFoundError) as caught:
        index.get(asked)
    error = caught.value
    assert (error.resource_type, error.resource_name) == (DOCUMENT_RESOURCE_TYPE, asked)
    assert error.message.startswith(f"no document {asked!r} in the index")
    if meant is None:
        assert "did you mean" not in error.message
    else:
        assert error.message.endswith(f"did you mean {meant!r}?")


@pytest.mark.parametrize(
    ("asked", "meant"),
    [
        ("scott derrickson", "Scott Derrickson"),  # free-text ids keep their own separators
        (" Scott Derrickson ", "Scott Derrickson"),
        ("ac/dc", "AC/DC"),
        ("AC DC", None),
    ],
)
def test_ids_with_spaces_or_slashes_are_still_named(asked: str, meant: str | None) -> None:
    index = DocumentIndex([*chunks("Scott Derrickson", 1), *chunks("AC/DC", 2)])
    assert index.meant(asked) == meant


def test_a_bare_section_number_two_acts_share_names_neither() -> None:
    index = DocumentIndex([*chunks("IPC_420", 1), *chunks("CRPC_420", 1), *chunks("CRPC_7", 1)])
    assert index.meant("420") is None
    assert index.meant("7") == "CRPC_7"


@given(st.text(max_size=300))
def test_any_id_is_served_or_not_found_never_another_error(asked: str) -> None:
    index = DocumentIndex([*chunks("IPC_420", 2), *chunks("Ünïcode_doc", 1)])
    try:
        found = index.get(asked)
    except NotFoundError as error:
        assert error.resource_name == asked
        assert asked not in ("IPC_420", "Ünïcode_doc")
    else:
        assert asked in ("IPC_420", "Ünïcode_doc")
        assert {c.doc_id for c in found} == {asked}


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def act_chunks(act: str, doc_id: str) -> list[Chunk]:
    return [Chunk(f"{doc_id}_0", doc_id, "Sentence.", act=act)]


class TestListing:
    @pytest.fixture
    def index(self) -> DocumentIndex:
        docs = [("IPC", f"IPC_{n}") for n in range(1, 6)] + [("CRPC", "CRPC_1"), ("IPC", "IPC_6")]
        return DocumentIndex([c for act, d in docs for c in act_chunks(act, d)])

    def test_pages_cover_the_listing_once_in_index_order(self, index: DocumentIndex) -> None:
        seen, token, totals = [], "", set()
        for _ in range(10):
            page = index.page([], token, 3, index_version="v1")
            seen += [chunks[0].doc_id for chunks in page.documents]
            totals.add(page.total_size)
            token = page.next_page_token
            if not token:
                break
        assert seen == [f"IPC_{n}" for n in range(1, 6)] + ["CRPC_1", "IPC_6"]
        assert totals == {7}

    def test_acts_limit_the_listing(self, index: DocumentIndex) -> None:
        page = index.page(["CRPC"], "", 10, index_version="v1")
        assert [c[0].doc_id for c in page.documents] == ["CRPC_1"]
        assert page.total_size == 1 and page.next_page_token == ""

    @pytest.mark.parametrize(
        ("token_from", "then", "why"),
        [
            ({"acts": [], "index_version": "v1"}, {"acts": ["IPC"], "index_version": "v1"}, "other acts"),
            ({"acts": [], "index_version": "v1"}, {"acts": [], "index_version": "v2"}, "index 'v1'"),
        ],
    )  # fmt: skip
    def test_a_token_holds_only_for_its_acts_and_index(
        self, index: DocumentIndex, token_from: dict[str, Any], then: dict[str, Any], why: str
    ) -> None:
        token = index.page(token_from["acts"], "", 2, index_version=token_from["index_version"])
        with pytest.raises(InvalidInputError) as caught:
            index.page(then["acts"], token.next_page_token, 2, index_version=then["index_version"])
        (violation,) = caught.value.violations
        assert violation.field == "page_token" and why in violation.description

    @given(st.text(max_size=600) | st.binary(max_size=600).map(_b64))
    @example(_b64(b"[" * 1000))  # deep nesting: a RecursionError in json, once
    @example(_b64(b'{"o": true, "a": [], "i": "v1"}'))  # a bool is no offset
    @example(_b64(b'{"o": 5, "a": [], "i": "v1", "x": 1}'))
    @example(_b64(b'{"o": 1, "a": [], "i": "v1"}' + b" " * 5000))  # longer than any of ours
    def test_any_other_token_is_invalid_argument_never_another_error(self, token: str) -> None:
        index = DocumentIndex(act_chunks("IPC", "IPC_1") + act_chunks("IPC", "IPC_2"))
        if not token:
            return
        with pytest.raises(InvalidInputError) as caught:
            index.page([], token, 2, index_version="v1")
        assert caught.value.violations[0].field == "page_token"

    @pytest.mark.parametrize("version", [b"5", b"null", b'["' + b"x" * 3000 + b'"]', b"{}"])
    def test_a_token_whose_index_version_is_not_text_is_not_ours(self, version: bytes) -> None:
        index = DocumentIndex(act_chunks("IPC", "IPC_1") + act_chunks("IPC", "IPC_2"))
        forged = _b64(b'{"o":1,"a":[],"i":' + version + b"}")
        with pytest.raises(InvalidInputError) as caught:
            index.page([], forged, 2, index_version="v1")
        (violation,) = caught.value.violations
        assert violation.description == "is not a page token ListDocuments gave"

    def test_a_forged_index_version_is_not_echoed_back(self) -> None:
        index = DocumentIndex(act_chunks("IPC", "IPC_1") + act_chunks("IPC", "IPC_2"))
        forged = _b64(b'{"o":1,"a":[],"i":"' + b"x" * 2000 + b'"}')
        with pytest.raises(InvalidInputError) as caught:
            index.page([], forged, 2, index_version="v1")
        (violation,) = caught.value.violations
        assert "was made for another index, and 'v1' serves now" in violation.description
        assert len(violation.description) < 200

    def test_a_token_past_the_listing_is_invalid_argument(self) -> None:
        index = DocumentIndex(act_chunks("IPC", "IPC_1") + act_chunks("IPC", "IPC_2"))
        with pytest.raises(InvalidInputError, match="points past the listing's 2 documents"):
            index.page([], _b64(b'{"o":2,"a":[],"i":"v1"}'), 2, index_version="v1")
        page = index.page([], _b64(b'{"o":1,"a":[],"i":"v1"}'), 2, index_version="v1")
        assert [c[0].doc_id for c in page.documents] == ["IPC_2"]


class TestWholeDocumentResponse:
    def test_a_document_too_large_for_one_message_is_refused_with_its_sizes(self) -> None:
        chunks = [c for c in statute_chunks() if c.doc_id == "IPC_420"]
        fits = convert.document_response(chunks, "v1", max_bytes=1 << 20)
        size = fits.ByteSize()
        # Neighbours are in the text already: each passage is sent once.
        assert all(not p.context_before and not p.context_after for p in fits.document.passages)
        assert fits.document.passage_count == len(chunks) == 2
        with pytest.raises(MessageTooLargeError) as caught:
            convert.document_response(chunks, "v1", max_bytes=size - 1)
        assert f"is {size:,} bytes whole, over this server's {size - 1:,}-byte" in str(caught.value)
        assert "filters.doc_ids ['IPC_420']" in str(caught.value)
        assert status.code_for(caught.value) == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert convert.document_response(chunks, "v1", max_bytes=size).ByteSize() == size


def test_listing_an_act_in_another_case_names_the_act_meant() -> None:
    from grounded.retrieval.v1 import retrieval_service_pb2 as pb

    with pytest.raises(InvalidInputError) as caught:
        convert.list_from_proto(
            pb.ListDocumentsRequest(acts=["ipc"]), known_acts=frozenset({"IPC"})
        )
    (violation,) = caught.value.violations
    assert (violation.field, violation.description) == (
        "acts[0]",
        "unknown value 'ipc'; did you mean 'IPC'? (acts are exact codes)",
    )

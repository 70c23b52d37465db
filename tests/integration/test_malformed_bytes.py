"""Bytes that are not the request message (here: a string field that is not UTF-8, which
protobuf rejects) get INVALID_ARGUMENT with a field violation from every RPC, not grpc's
UNKNOWN "Unexpected DecodeError"; a well-formed request on the same channel still works."""

from __future__ import annotations

import grpc
import pytest
from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.validator.v1 import validator_service_pb2 as vpb
from grpc import aio

from stack.inprocess import InProcessStack
from tests.support.grpc_helpers import error_reason, field_violations

pytestmark = pytest.mark.integration

# Field 1 (query / question / answer), length 3: an encoded lone surrogate, which is not UTF-8.
NOT_UTF8 = b"\x0a\x03\xed\xa0\x80"
# The same field holding "theft" (or a document id): a valid request of each method.
VALID = b"\x0a\x05theft"
VALID_DOC_ID = b"\x0a\x07IPC_420"
# ListDocuments: field 1 is page_size (an integer), so the bad string goes in field 3 (acts).
NOT_UTF8_ACTS = b"\x1a\x03\xed\xa0\x80"
VALID_LIST = b"\x08\x02"  # page_size 2

METHODS = [
    ("retrieval", "/grounded.retrieval.v1.RetrievalService/RetrievePassages", False, VALID),
    ("retrieval", "/grounded.retrieval.v1.RetrievalService/GetDocument", False, VALID_DOC_ID),
    ("retrieval", "/grounded.retrieval.v1.RetrievalService/ListDocuments", False, VALID_LIST),
    ("synthesis", "/grounded.synthesis.v1.SynthesisService/SynthesizeAnswer", False, VALID),
    ("synthesis", "/grounded.synthesis.v1.SynthesisService/StreamAnswer", True, VALID),
    ("synthesis", "/grounded.synthesis.v1.SynthesisService/GetDocument", False, VALID_DOC_ID),
    ("synthesis", "/grounded.synthesis.v1.SynthesisService/ListDocuments", False, VALID_LIST),
    ("validator", "/grounded.validator.v1.ValidatorService/ValidateAnswer", False, VALID),
]


def test_every_rpc_of_every_service_is_listed() -> None:
    listed = {method for _, method, _, _ in METHODS}
    served = {
        f"/{service.full_name}/{method.name}"
        for module in (rpb, spb, vpb)
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    }
    assert listed == served


async def call(channel: aio.Channel, method: str, stream: bool, body: bytes) -> bytes:
    if stream:
        responses = channel.unary_stream(method)(body, timeout=30)
        return b"".join([r async for r in responses])
    response: bytes = await channel.unary_unary(method)(body, timeout=30)
    return response


@pytest.mark.parametrize(("service", "method", "stream", "valid"), METHODS, ids=lambda m: str(m))
async def test_a_request_that_does_not_parse_is_invalid_argument(
    stack: InProcessStack, service: str, method: str, stream: bool, valid: bytes
) -> None:
    async with aio.insecure_channel(getattr(stack, service)) as channel:
        with pytest.raises(aio.AioRpcError) as caught:
            bad = NOT_UTF8_ACTS if method.endswith("/ListDocuments") else NOT_UTF8
            await call(channel, method, stream, bad)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error_reason(caught.value) == "INVALID_INPUT"
        (description,) = field_violations(caught.value).values()
        assert description == (
            "the request does not parse (String field had bad UTF-8): every string field must "
            "be valid UTF-8"
        )
        assert caught.value.details() == description  # no stray ": " for the empty field path

        assert await call(channel, method, stream, valid)  # the parser is still the message's


# Field 1 as a length-delimited value of 5 bytes, of which only 3 follow: not a message at all.
CORRUPT = b"\x0a\x05abc"


@pytest.mark.parametrize(("service", "method", "stream", "valid"), METHODS, ids=lambda m: str(m))
async def test_corrupt_bytes_are_named_as_such_not_as_bad_utf8(
    stack: InProcessStack, service: str, method: str, stream: bool, valid: bytes
) -> None:
    async with aio.insecure_channel(getattr(stack, service)) as channel:
        with pytest.raises(aio.AioRpcError) as caught:
            await call(channel, method, stream, CORRUPT)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details() == (
        "the request does not parse (Wire format was corrupt): the bytes are not this method's "
        "request message (check that the client was built from the same proto)"
    )

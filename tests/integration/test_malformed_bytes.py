"""Bytes that are not the request message (here: a string field that is not UTF-8, which
protobuf rejects) get INVALID_ARGUMENT with a field violation from every RPC, not grpc's
UNKNOWN "Unexpected DecodeError"; a well-formed request on the same channel still works."""

from __future__ import annotations

import grpc
import pytest
from grpc import aio

from stack.inprocess import InProcessStack
from tests.support.grpc_helpers import error_reason, field_violations

pytestmark = pytest.mark.integration

# Field 1 (query / question / answer), length 3: an encoded lone surrogate, which is not UTF-8.
NOT_UTF8 = b"\x0a\x03\xed\xa0\x80"
# The same field holding "theft": a valid request of each service.
VALID = b"\x0a\x05theft"

METHODS = [
    ("retrieval", "/grounded.retrieval.v1.RetrievalService/RetrievePassages", False),
    ("synthesis", "/grounded.synthesis.v1.SynthesisService/SynthesizeAnswer", False),
    ("synthesis", "/grounded.synthesis.v1.SynthesisService/StreamAnswer", True),
    ("validator", "/grounded.validator.v1.ValidatorService/ValidateAnswer", False),
]


async def call(channel: aio.Channel, method: str, stream: bool, body: bytes) -> bytes:
    if stream:
        responses = channel.unary_stream(method)(body, timeout=30)
        return b"".join([r async for r in responses])
    response: bytes = await channel.unary_unary(method)(body, timeout=30)
    return response


@pytest.mark.parametrize(("service", "method", "stream"), METHODS, ids=lambda m: str(m))
async def test_a_request_that_does_not_parse_is_invalid_argument(
    stack: InProcessStack, service: str, method: str, stream: bool
) -> None:
    async with aio.insecure_channel(getattr(stack, service)) as channel:
        with pytest.raises(aio.AioRpcError) as caught:
            await call(channel, method, stream, NOT_UTF8)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error_reason(caught.value) == "INVALID_INPUT"
        (description,) = field_violations(caught.value).values()
        assert "UTF-8" in description

        assert await call(channel, method, stream, VALID)  # the parser is still the message's

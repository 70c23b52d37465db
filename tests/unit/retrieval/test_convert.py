"""RetrievePassages request proto → domain."""

from __future__ import annotations

from grounded.retrieval.v1 import retrieval_service_pb2 as pb

from services.retrieval import convert
from services.retrieval.search import StageSwitches


class TestRequestFromProto:
    def test_request_from_proto_reads_min_score_as_the_decimal_sent(self) -> None:
        request = pb.RetrievePassagesRequest.FromString(
            pb.RetrievePassagesRequest(query="theft", min_score=0.3).SerializeToString()
        )
        assert request.min_score == 0.30000001192092896  # what the float32 on the wire reads as

        parsed = convert.request_from_proto(
            request,
            known_acts=frozenset(),
            known_doc_ids=frozenset(),
            default_stages=StageSwitches(),
        )

        assert parsed.min_score == 0.3

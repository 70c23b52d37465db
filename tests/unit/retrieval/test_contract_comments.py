"""RetrievePassages' proto comments state the limits and defaults the server applies."""

from __future__ import annotations

import re
from pathlib import Path

from grounded.retrieval.v1 import retrieval_service_pb2 as pb

from services.common.documents import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from services.retrieval import limits
from services.retrieval.search import STAGES, StageSwitches

PROTOS = Path(__file__).resolve().parents[3] / "protos/grounded"
PROTO = PROTOS / "retrieval/v1/retrieval_service.proto"


def _comments(message: str) -> dict[str, str]:
    """Each field's comment in ``message``, one line, by field name."""
    text = PROTO.read_text()
    start = text.index(f"message {message} {{")
    body = text[start : text.index("\n}", start)]
    return {
        name: " ".join(line.strip(" /") for line in comment.splitlines())
        for comment, name in re.findall(r"((?:  //.*\n)+)  [\w. ]+ (\w+) = \d+;", body)
    }


class TestRetrievalContractComments:
    def test_request_comments_state_the_limits(self) -> None:
        comments = _comments("RetrievePassagesRequest")
        chars = f"{limits.MAX_QUERY_CHARS:,}"
        query, top_k = comments["query"], comments["top_k"]
        assert f"at most {chars} characters as sent and at most {chars} once normalised" in query
        assert "NFKC" in query
        assert f"1 to {limits.MAX_TOP_K}; 0 means the default ({limits.DEFAULT_TOP_K})" in top_k
        assert "A finite number of 0 or more" in comments["min_score"]
        listing = _comments("ListDocumentsRequest")["page_size"]
        assert f"1 to {MAX_PAGE_SIZE}; 0 means {DEFAULT_PAGE_SIZE}." in listing

    def test_every_stage_switch_states_the_servers_default(self) -> None:
        comments = _comments("RetrievalStages")
        defaults = StageSwitches()
        assert set(comments) == set(pb.RetrievalStages.DESCRIPTOR.fields_by_name)
        for name, comment in comments.items():
            said = "on" if getattr(defaults, name) else "off"
            assert f"(default {said}" in comment, name

    def test_stage_timing_names_retrievals_stages_in_order(self) -> None:
        text = (PROTOS / "type/v1/evidence.proto").read_text()
        start = text.index("message StageTiming {")
        comment = " ".join(
            text[start : text.index("string stage = 1;", start)].replace("//", "").split()
        )
        listed = comment.split("whether it ran or not:", 1)[1].split(".", 1)[0]
        assert re.findall(r'"(\w+)"', listed) == list(STAGES)

"""Fuzzes the proto → domain conversion of all three services with hostile requests.

Each target checks two things on every input: no exception but InvalidInputError escapes, and the
request is rejected exactly when it breaks a documented limit (docs/RELIABILITY.md), with a field
violation naming each offending field, mapped to INVALID_ARGUMENT with BadRequest details.
"""

from __future__ import annotations

import math
import unicodedata
from typing import TypeVar

import grpc
import pytest
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.type.v1 import evidence_pb2, validation_pb2
from grounded.validator.v1 import validator_service_pb2 as vpb
from hypothesis import example, given
from hypothesis import strategies as st

from services.common import status, validation_proto
from services.common.documents import (
    DEFAULT_PAGE_SIZE,
    MAX_LIST_ACTS,
    MAX_PAGE_SIZE,
    require_list,
)
from services.common.errors import InvalidInputError
from services.common.evidence import MAX_ID_CHARS
from services.common.language.citations import uncitable
from services.common.language.text import is_blank
from services.retrieval import convert as retrieval_convert
from services.retrieval.limits import MAX_QUERY_CHARS, MAX_TOP_K
from services.retrieval.search import StageSwitches
from services.synthesis import convert as synthesis_convert
from services.validator import convert as validator_convert
from services.validator import limits as validator_limits
from services.validator.engine import validate
from services.validator.limits import MAX_ANSWER_BYTES, MAX_EVIDENCE
from tests.fuzz.profiles import FUZZ, INPUTS, TIMEOUT_S
from tests.fuzz.strategies import (
    KNOWN_ACTS,
    KNOWN_DOC_IDS,
    retrieval_requests,
    synthesis_requests,
    validator_requests,
)

pytestmark = pytest.mark.timeout(TIMEOUT_S)
M = TypeVar("M", bound=Message)


def _over_the_wire(request: M) -> M:
    """What a server's deserializer hands the handler: the message after a serialize/parse trip."""
    return type(request).FromString(request.SerializeToString())


def _violated_fields(error: InvalidInputError) -> set[str]:
    """Top-level request fields named by the violations (``evidence[3].text`` → ``evidence``)."""
    assert error.violations, "a rejection must name at least one field"
    for v in error.violations:
        assert v.field and v.description, v
    return {v.field.split(".")[0].split("[")[0] for v in error.violations}


def _assert_invalid_argument(error: InvalidInputError) -> None:
    """The error maps to INVALID_ARGUMENT with a BadRequest listing the violations in order, as
    many as fit the status's bound, and ErrorInfo counting the rest (``violations_not_shown``)."""
    rich = status.to_status(error)
    assert rich.code == grpc.StatusCode.INVALID_ARGUMENT
    bad = error_details_pb2.BadRequest()
    info = error_details_pb2.ErrorInfo()
    details = _status_details(rich)
    packed = [d for d in details if d.type_url.endswith("google.rpc.BadRequest")]
    assert len(packed) == 1 and packed[0].Unpack(bad)
    assert any(d.Unpack(info) for d in details)
    sent = [(f.field, f.description) for f in bad.field_violations]
    assert sent and sent == [(v.field, v.description) for v in error.violations][: len(sent)]
    assert int(info.metadata.get("violations_not_shown", "0")) == len(error.violations) - len(sent)
    assert sum(len(v) for _, v in rich.trailing_metadata) <= 8 * 1024


def _status_details(rich: grpc.Status) -> list[any_pb2.Any]:
    for key, value in rich.trailing_metadata:
        if key == "grpc-status-details-bin":
            return list(status_pb2.Status.FromString(value).details)
    raise AssertionError("no grpc-status-details-bin trailer")


# Valid requests, so the accepted-request checks run on every run (generated requests are
# rarely valid); TestFixedExamples proves each is accepted.
VALID_RETRIEVAL = [
    rpb.RetrievePassagesRequest(query="What is the punishment for theft?", top_k=5),
    rpb.RetrievePassagesRequest(
        query="  cheating  ",
        top_k=MAX_TOP_K,
        filters=evidence_pb2.EvidenceFilters(acts=["IPC"], doc_ids=["IPC_420"]),
        stages=rpb.RetrievalStages(dense=False, rerank=True),
        min_score=0.25,
    ),
    # top_k 0 asks for the default.
    rpb.RetrievePassagesRequest(query="x" * MAX_QUERY_CHARS, top_k=0),
]
VALID_SYNTHESIS: list[tuple[spb.SynthesizeAnswerRequest, str | None]] = [
    (spb.SynthesizeAnswerRequest(question="What is theft?"), None),
    (
        spb.SynthesizeAnswerRequest(
            question="  And its punishment? ",
            top_k=synthesis_convert.MAX_TOP_K,
            history=[
                spb.ConversationTurn(role=spb.TURN_ROLE_USER, text="What is theft?"),
                spb.ConversationTurn(role=spb.TURN_ROLE_ASSISTANT, text="Theft is [IPC_378_0]."),
            ],
            generator=spb.GENERATOR_KIND_EXTRACTIVE,
        ),
        "openai",
    ),
    (
        spb.SynthesizeAnswerRequest(
            question="What is cheating?", top_k=3, generator=spb.GENERATOR_KIND_OPENAI, model="m"
        ),
        "extractive",
    ),
]


class TestRetrievalRequestFromProto:
    @FUZZ
    @given(retrieval_requests())
    @example(VALID_RETRIEVAL[0])
    @example(VALID_RETRIEVAL[1])
    @example(VALID_RETRIEVAL[2])
    def test_retrieval_request_rejected_exactly_when_a_limit_is_broken(
        self, request: rpb.RetrievePassagesRequest
    ) -> None:
        INPUTS["retrieval.request_from_proto"] += 1
        request = _over_the_wire(request)
        defaults = StageSwitches()
        expected: set[str] = set()
        if is_blank(request.query) or _searched_length(request.query) > MAX_QUERY_CHARS:
            expected.add("query")
        if not 0 <= request.top_k <= MAX_TOP_K:
            expected.add("top_k")
        if not (math.isfinite(request.min_score) and request.min_score >= 0):
            expected.add("min_score")
        for values, known in (
            (request.filters.acts, KNOWN_ACTS),
            (request.filters.doc_ids, KNOWN_DOC_IDS),
        ):
            too_long = any(len(v) > MAX_ID_CHARS for v in values)
            if len(values) > retrieval_convert.MAX_FILTER_VALUES or set(values) - known or too_long:
                expected.add("filters")
        stages = request.stages
        dense = stages.dense if stages.HasField("dense") else defaults.dense
        lexical = stages.lexical if stages.HasField("lexical") else defaults.lexical
        if not (dense or lexical):
            expected.add("stages")
        try:
            parsed = retrieval_convert.request_from_proto(
                request,
                known_acts=KNOWN_ACTS,
                known_doc_ids=KNOWN_DOC_IDS,
                default_stages=defaults,
            )
        except InvalidInputError as error:
            assert _violated_fields(error) == expected
            _assert_invalid_argument(error)
            return
        assert not expected, f"accepted a request breaking {expected}"
        assert 1 <= parsed.top_k <= MAX_TOP_K
        assert parsed.query and len(parsed.query) <= MAX_QUERY_CHARS


def _searched_length(text: str) -> int:
    """Characters as retrieval searches the text (NFKC, whitespace runs as one space, trimmed),
    restated here rather than taken from the code under test; never fewer than the raw text's
    own limit counts, since the raw length is checked too."""
    searched = len(" ".join(unicodedata.normalize("NFKC", text).split()))
    return max(len(text), searched)


class TestSynthesisRequestFromProto:
    @FUZZ
    @given(synthesis_requests(), st.sampled_from([None, "extractive", "openai"]))
    @example(*VALID_SYNTHESIS[0])
    @example(*VALID_SYNTHESIS[1])
    @example(*VALID_SYNTHESIS[2])
    def test_synthesis_request_rejected_exactly_when_a_limit_is_broken(
        self, request: spb.SynthesizeAnswerRequest, default_generator: str | None
    ) -> None:
        INPUTS["synthesis.request_from_proto"] += 1
        request = _over_the_wire(request)
        c = synthesis_convert
        expected: set[str] = set()
        question = request.question
        if is_blank(question) or _searched_length(question) > c.MAX_QUESTION_CHARS:
            expected.add("question")
        if not 0 <= request.top_k <= c.MAX_TOP_K:
            expected.add("top_k")
        if request.generator not in (0, 1, 2):
            expected.add("generator")
        if len(request.history) > c.MAX_HISTORY_TURNS or any(
            t.role not in (spb.TURN_ROLE_USER, spb.TURN_ROLE_ASSISTANT)
            or len(t.text) > c.MAX_TURN_CHARS
            for t in request.history[: c.MAX_HISTORY_TURNS]
        ):
            expected.add("history")
        generator = c.GENERATOR_NAMES.get(request.generator) or default_generator
        # A model names an OpenAI model: refused when the server knows another generator would run.
        wrong_generator = default_generator is not None and generator != "openai"
        # A model name is visible text: not blank, nothing a terminal would not print.
        unprintable = bool(request.model) and (
            is_blank(request.model) or not request.model.isprintable()
        )
        if len(request.model) > 200 or unprintable or (request.model and wrong_generator):
            expected.add("model")
        # Filter values are retrieval's to know; their length is checked here too (an id's).
        filters = (*request.filters.acts, *request.filters.doc_ids)
        if any(len(v) > MAX_ID_CHARS for v in filters):
            expected.add("filters")
        try:
            parsed = c.request_from_proto(
                request, default_top_k=5, default_generator=default_generator
            )
        except InvalidInputError as error:
            assert _violated_fields(error) == expected
            _assert_invalid_argument(error)
            return
        assert not expected, f"accepted a request breaking {expected}"
        assert 1 <= parsed.top_k <= c.MAX_TOP_K
        assert parsed.question == question.strip()
        assert len(parsed.history) == len(request.history)


class TestValidatorRequestFromProto:
    @FUZZ
    @given(validator_requests())
    def test_validator_request_rejected_exactly_when_a_limit_is_broken(
        self, request: vpb.ValidateAnswerRequest
    ) -> None:
        INPUTS["validator.request_from_proto"] += 1
        request = _over_the_wire(request)
        expected: set[str] = set()
        if len(request.answer.encode()) > MAX_ANSWER_BYTES:
            expected.add("answer")
        if len(request.evidence) > MAX_EVIDENCE:
            expected.add("evidence")
        seen: set[str] = set()
        for passage in request.evidence[: MAX_EVIDENCE + 1]:
            sid = passage.semantic_id
            if (
                not sid.strip()
                or len(sid) > validator_limits.MAX_ID_CHARS
                or sid in seen
                or uncitable(sid)
                or len(passage.text) > validator_limits.MAX_EVIDENCE_TEXT_CHARS
            ):
                expected.add("evidence")
            seen.add(sid)
        o = request.options
        for name in ("single_citation_threshold", "multi_citation_threshold"):
            if o.HasField(name) and not 0.0 <= getattr(o, name) <= 1.0:
                expected.add("options")
        try:
            answer, evidence, options = validator_convert.request_from_proto(request)
        except InvalidInputError as error:
            assert _violated_fields(error) == expected
            _assert_invalid_argument(error)
            return
        assert not expected, f"accepted a request breaking {expected}"
        # An accepted request goes on through the handler's whole path: engine, then proto.
        report = validate(answer, evidence, options)
        response = validation_proto.report_to_proto(report)
        assert response.verdict != validation_pb2.VALIDATION_VERDICT_UNSPECIFIED
        assert set(response.cited_ids) <= {p.semantic_id for p in request.evidence}


_DOC_IDS = st.one_of(
    st.text(max_size=20),
    st.text(min_size=MAX_ID_CHARS - 2, max_size=MAX_ID_CHARS + 2),
    st.sampled_from(["", " ", "\u200b", "IPC_420", "IPC_420_0", "ipc_420", "\u0000", "I" * 257]),
)


class TestGetDocumentFromProto:
    @FUZZ
    @given(_DOC_IDS)
    def test_doc_id_rejected_exactly_when_blank_or_too_long(self, doc_id: str) -> None:
        INPUTS["documents.doc_id"] += 1
        request = _over_the_wire(rpb.GetDocumentRequest(doc_id=doc_id))
        broken = is_blank(request.doc_id) or len(request.doc_id) > MAX_ID_CHARS
        try:
            parsed = retrieval_convert.doc_id_from_proto(request)
        except InvalidInputError as error:
            assert broken, f"rejected a valid id {doc_id!r}"
            assert _violated_fields(error) == {"doc_id"}
            _assert_invalid_argument(error)
            return
        assert not broken, f"accepted {doc_id!r}"
        assert parsed == doc_id  # ids are exact: nothing is stripped or folded


class TestListDocumentsFromProto:
    @FUZZ
    @given(
        st.integers(min_value=-(2**31), max_value=2**31 - 1) | st.integers(-3, MAX_PAGE_SIZE + 3),
        st.lists(
            st.text(max_size=8) | st.sampled_from(["A" * 256, "A" * 257]),
            max_size=MAX_LIST_ACTS + 5,
        ),
    )
    def test_listing_rejected_exactly_when_a_limit_is_broken(
        self, page_size: int, acts: list[str]
    ) -> None:
        INPUTS["documents.list"] += 1
        request = _over_the_wire(spb.ListDocumentsRequest(page_size=page_size, acts=acts))
        expected: set[str] = set()
        if not 0 <= request.page_size <= MAX_PAGE_SIZE:
            expected.add("page_size")
        if len(request.acts) > MAX_LIST_ACTS or any(len(a) > MAX_ID_CHARS for a in request.acts):
            expected.add("acts")
        try:
            size = require_list(request.page_size, request.acts)
        except InvalidInputError as error:
            assert _violated_fields(error) == expected
            _assert_invalid_argument(error)
            return
        assert not expected, f"accepted a listing breaking {expected}"
        assert size == (request.page_size or DEFAULT_PAGE_SIZE)


class TestFixedExamples:
    """The valid examples above are accepted: were one to be rejected, the accepted-request
    checks it is there for would silently not run."""

    @pytest.mark.parametrize("request_", VALID_RETRIEVAL)
    def test_valid_retrieval_examples_are_accepted(
        self, request_: rpb.RetrievePassagesRequest
    ) -> None:
        parsed = retrieval_convert.request_from_proto(
            _over_the_wire(request_),
            known_acts=KNOWN_ACTS,
            known_doc_ids=KNOWN_DOC_IDS,
            default_stages=StageSwitches(),
        )

        assert parsed.query == request_.query.strip()

    @pytest.mark.parametrize(("request_", "default_generator"), VALID_SYNTHESIS)
    def test_valid_synthesis_examples_are_accepted(
        self, request_: spb.SynthesizeAnswerRequest, default_generator: str | None
    ) -> None:
        parsed = synthesis_convert.request_from_proto(
            _over_the_wire(request_), default_top_k=5, default_generator=default_generator
        )

        assert parsed.question == request_.question.strip()

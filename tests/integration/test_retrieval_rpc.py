"""RetrievePassages over a real channel: validation details, filters, stage switches, deadlines."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import grpc
import numpy as np
import numpy.typing as npt
import pytest
from grounded.retrieval.v1 import retrieval_service_pb2 as pb
from grounded.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc
from grounded.type.v1 import evidence_pb2

from services.common.errors import DeadlineExceededError
from services.common.server import ServiceApp
from services.retrieval import server as retrieval_server
from services.retrieval.config import RetrievalConfig
from services.retrieval.embedding import Encoder
from services.retrieval.search import Searcher, SearchRequest, SearchResult
from tests.support.grpc_helpers import error_reason, field_violations
from tests.unit.retrieval.search_fakes import HashingEncoder, make_artifacts, statute_chunks

pytestmark = pytest.mark.integration


def config_for(index_dir: Path, **extra: str) -> RetrievalConfig:
    return RetrievalConfig.from_env(
        {
            "RETRIEVAL_PORT": "0",
            "RETRIEVAL_METRICS_PORT": "0",
            "RETRIEVAL_GRACE_S": "1",
            "RETRIEVAL_INDEX_DIR": str(index_dir),
            **extra,
        }
    )


@pytest.fixture(scope="module")
async def app(ipc_index: Path, encoder: Encoder) -> AsyncIterator[ServiceApp]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(retrieval_server, "load_encoder", lambda *a, **k: encoder)
        service = retrieval_server.create_app(config_for(ipc_index))
        await service.start()
    yield service
    await service.stop(0)


@pytest.fixture
async def stub(app: ServiceApp) -> AsyncIterator[pb_grpc.RetrievalServiceStub]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
        yield pb_grpc.RetrievalServiceStub(channel)


async def retrieve(
    stub: pb_grpc.RetrievalServiceStub, **fields: object
) -> pb.RetrievePassagesResponse:
    request = pb.RetrievePassagesRequest(**fields)  # type: ignore[arg-type]
    return await stub.RetrievePassages(request, timeout=30)  # type: ignore[no-any-return]


class TestValidation:
    @pytest.mark.parametrize(
        ("fields", "bad"),
        [
            ({"query": "q" * 2001, "top_k": 5}, {"query"}),
            # 2,000 characters, 36,000 once NFKC-normalised as every stage searches it.
            ({"query": "\ufdfa" * 2000, "top_k": 5}, {"query"}),
            ({"query": "theft", "top_k": 101}, {"top_k"}),
            ({"query": "q" * 2001, "top_k": 101}, {"query", "top_k"}),
            ({"query": "   "}, {"query"}),
            ({"query": "theft", "top_k": -1}, {"top_k"}),
            (
                {"query": "theft", "filters": evidence_pb2.EvidenceFilters(acts=["NOPE"])},
                {"filters.acts[0]"},
            ),
            (
                {"query": "theft", "filters": evidence_pb2.EvidenceFilters(doc_ids=["IPC_9999"])},
                {"filters.doc_ids[0]"},
            ),
            (
                {"query": "theft", "stages": pb.RetrievalStages(dense=False, lexical=False)},
                {"stages"},
            ),
        ],
    )
    async def test_retrieve_bad_input_is_invalid_argument_with_field_violations(
        self, stub: pb_grpc.RetrievalServiceStub, fields: dict[str, object], bad: set[str]
    ) -> None:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await retrieve(stub, **fields)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert set(field_violations(info.value)) == bad
        assert error_reason(info.value) == "INVALID_INPUT"

    @pytest.mark.parametrize(
        ("fields", "field", "description"),
        [
            ({"top_k": -3}, "top_k", "must be between 1 and 100, or 0 for the default (got -3)"),
            (
                {"filters": evidence_pb2.EvidenceFilters(doc_ids=["IPC_420_0"])},
                "filters.doc_ids[0]",
                "unknown value 'IPC_420_0'; did you mean 'IPC_420'?",
            ),
            (
                {"filters": evidence_pb2.EvidenceFilters(doc_ids=["IPC/420"])},
                "filters.doc_ids[0]",
                "unknown value 'IPC/420'; did you mean 'IPC_420'?",
            ),
            (
                {"filters": evidence_pb2.EvidenceFilters(acts=["ipc"])},
                "filters.acts[0]",
                "unknown value 'ipc'; did you mean 'IPC'? (acts are exact codes)",
            ),
        ],
    )
    async def test_retrieve_bad_input_says_what_was_meant(
        self,
        stub: pb_grpc.RetrievalServiceStub,
        fields: dict[str, object],
        field: str,
        description: str,
    ) -> None:
        """Found by a new user: GetDocument named the document meant, filters did not, and
        top_k's rule left out the 0 the wire accepts."""
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await retrieve(stub, query="theft", **fields)
        assert field_violations(info.value) == {field: description}

    async def test_retrieve_filter_values_of_a_megabyte_are_named_not_echoed(
        self, stub: pb_grpc.RetrievalServiceStub
    ) -> None:
        """The audit's request: three 1 MB act codes. Each was echoed whole ("unknown value
        'AAAA…'"), a 3 MB log line here and an error too large for the caller's gRPC to read
        (RESOURCE_EXHAUSTED "received metadata size exceeds hard limit"), which synthesis then
        reported as retrieval being down."""
        filters = evidence_pb2.EvidenceFilters(acts=["A" * 1_000_000] * 3, doc_ids=["IPC_378"])
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await retrieve(stub, query="theft", filters=filters)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert field_violations(info.value) == {
            f"filters.acts[{i}]": "must be at most 256 characters (got 1,000,000)" for i in range(3)
        }
        assert len(info.value.details() or "") < 400
        assert sum(len(v) for _, v in info.value.trailing_metadata() or ()) < 4096

    async def test_retrieve_a_hundred_unknown_filter_values_is_still_invalid_argument(
        self, stub: pb_grpc.RetrievalServiceStub
    ) -> None:
        """Within the limits (100 values of 256 characters) the unknown-value violations, each
        with the known acts, were over gRPC's 16 KiB for a status: the status is bounded, the
        first violations sent and the rest counted."""
        filters = evidence_pb2.EvidenceFilters(
            acts=[f"{i:03d}" + "A" * 253 for i in range(100)],
            doc_ids=[f"{i:03d}" + "D" * 253 for i in range(100)],
        )
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await retrieve(stub, query="theft", filters=filters)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error_reason(info.value) == "INVALID_INPUT"
        violations = field_violations(info.value)
        assert list(violations)[:3] == [f"filters.acts[{i}]" for i in range(3)]
        assert "unknown value '000AAAA" in violations["filters.acts[0]"]
        assert "… (256 characters)" in violations["filters.acts[0]"]

    async def test_retrieve_query_of_exactly_2000_characters_is_accepted(
        self, stub: pb_grpc.RetrievalServiceStub
    ) -> None:
        query = ("cheating " * 250)[:2000]
        response = await retrieve(stub, query=query, top_k=100)
        assert response.passages


class TestSearchOverRpc:
    async def test_retrieve_named_section_comes_first(
        self, stub: pb_grpc.RetrievalServiceStub
    ) -> None:
        response = await retrieve(stub, query="s. 420 IPC", top_k=5)
        top = response.passages[0]
        assert top.doc_id == "IPC_420"
        assert top.semantic_id.startswith("IPC_420_")

    async def test_retrieve_doc_id_filter(self, stub: pb_grpc.RetrievalServiceStub) -> None:
        wanted = ["IPC_378", "IPC_379"]
        response = await retrieve(
            stub,
            query="what happens to a person who commits an offence",
            top_k=10,
            filters=evidence_pb2.EvidenceFilters(doc_ids=wanted),
        )
        assert response.passages
        assert {p.doc_id for p in response.passages} <= set(wanted)

    @pytest.mark.parametrize("stage", ["dense", "lexical", "expansion", "rerank", "aggregation"])
    async def test_retrieve_stage_switch_is_honoured_and_reported(
        self, stub: pb_grpc.RetrievalServiceStub, stage: str
    ) -> None:
        on = {"dense", "lexical", "expansion", "rerank", "aggregation"}
        switches = {s: s != stage for s in on} | {"cache": False}
        response = await retrieve(
            stub,
            query="What is the punishment for theft?",
            top_k=5,
            stages=pb.RetrievalStages(**switches),
        )
        ran = {t.stage for t in response.timings if t.ran}
        expected = (on - {stage}) | ({"fusion"} if stage not in {"dense", "lexical"} else set())
        assert ran == expected
        assert all(t.duration_ms > 0 for t in response.timings if t.ran)
        assert response.passages
        assert bool(response.expanded_queries) == (stage != "expansion")

    async def test_retrieve_defaults_leave_expansion_and_rerank_off(
        self, stub: pb_grpc.RetrievalServiceStub
    ) -> None:
        response = await retrieve(stub, query="punishment for theft", top_k=3)
        ran = {t.stage for t in response.timings if t.ran}
        assert {"dense", "lexical", "fusion", "aggregation"} <= ran
        assert not ran & {"expansion", "rerank", "cache"}  # no Redis configured here


class TestLongQueries:
    """The embedding model reads 256 word pieces; a longer query is read in windows that cover
    all of it, so its tail still counts (it was silently dropped from the dense stage)."""

    FILLER = "The statute sets out rules on many offences and their punishment. " * 28

    def test_windows_cover_the_text_each_within_the_model_input(self, encoder: Encoder) -> None:
        text = self.FILLER + "murder of a person by poisoning"
        windows = encoder.windows(text)
        assert len(windows) >= 2
        assert windows[0] == text[: len(windows[0])]
        assert text.endswith(windows[-1])
        for window in windows:
            assert len(encoder.token_spans(window)) <= encoder.max_tokens  # type: ignore[attr-defined]
        joined = windows[0]
        for window in windows[1:]:  # each starts inside the one before: nothing is skipped
            start = text.index(window)
            assert start < len(joined)
            joined = text[: start + len(window)]
        assert joined == text
        assert encoder.windows("What is theft?") == ["What is theft?"]

    async def test_the_tail_of_a_long_query_changes_the_dense_results(
        self, stub: pb_grpc.RetrievalServiceStub
    ) -> None:
        dense = pb.RetrievalStages(dense=True, lexical=False, aggregation=False, cache=False)
        found = []
        for tail in ("murder of a person by poisoning", "defamation of a woman by words"):
            query = self.FILLER + tail
            assert len(query) <= 2000
            response = await retrieve(stub, query=query, top_k=5, stages=dense)
            found.append([p.semantic_id for p in response.passages])
        assert found[0] != found[1]


class TestCrossEncoderWarmUp:
    async def test_warm_up_fails_on_a_directory_without_a_cross_encoder(
        self, ipc_index: Path, tmp_path: Path
    ) -> None:
        service = retrieval_server.create_app(
            config_for(ipc_index, RETRIEVAL_CROSS_ENCODER_PATH=str(tmp_path))
        )
        try:
            with pytest.raises(ValueError, match="RETRIEVAL_CROSS_ENCODER_PATH") as info:
                await service.start()
        finally:
            await service.stop(0)
        assert "no loadable cross-encoder" in str(info.value)


class SlowEncoder(HashingEncoder):
    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False
    ) -> npt.NDArray[np.float32]:
        time.sleep(self.delay_s)
        return super().encode(texts, batch_size=batch_size, show_progress=show_progress)


class OutcomeSearcher(Searcher):
    """Records how each search ended on the server, after the caller may have gone."""

    def __init__(self, encoder: HashingEncoder) -> None:
        super().__init__(make_artifacts(statute_chunks(), HashingEncoder()), encoder)
        self.outcomes: list[str] = []

    def search(self, request: SearchRequest, *, deadline: float | None = None) -> SearchResult:
        try:
            result = super().search(request, deadline=deadline)
        except DeadlineExceededError as exc:
            self.outcomes.append(f"stopped: {exc.metadata.get('stage')}")
            raise
        self.outcomes.append("completed")
        return result


class TestServerDeadline:
    async def test_retrieve_stops_working_after_the_callers_deadline(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        searcher = OutcomeSearcher(SlowEncoder(delay_s=0.3))
        monkeypatch.setattr(retrieval_server, "build_searcher", lambda config: searcher)
        service = retrieval_server.create_app(config_for(tmp_path))
        await service.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
                stub = pb_grpc.RetrievalServiceStub(channel)
                request = pb.RetrievePassagesRequest(query="punishment for theft")
                with pytest.raises(grpc.aio.AioRpcError) as info:
                    await stub.RetrievePassages(request, timeout=0.1)
                assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
                # The worker thread is still encoding; give it time to reach the next stage.
                for _ in range(50):
                    if searcher.outcomes:
                        break
                    await asyncio.sleep(0.05)
                assert searcher.outcomes == ["stopped: lexical"]
                # A caller with time to spare still gets an answer.
                response = await stub.RetrievePassages(request, timeout=10)
                assert response.passages and searcher.outcomes[-1] == "completed"
        finally:
            await service.stop(0)

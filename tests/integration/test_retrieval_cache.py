"""The retrieval result cache against a real, private redis-server: hits, TTL, an outage, and
entries rewritten in Redis (which has no authentication by default) never served."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from grounded.retrieval.v1 import retrieval_service_pb2 as pb
from grounded.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc
from prometheus_client import REGISTRY

from services.common.passages import scored_from_proto
from services.common.server import ServiceApp
from services.retrieval import server as retrieval_server
from services.retrieval.config import RetrievalConfig
from services.retrieval.embedding import Encoder
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.integration

TTL_S = 1234
UNAVAILABLE_LOG = "redis cache unavailable"


def events(outcome: str) -> float:
    value = REGISTRY.get_sample_value("grounded_retrieval_cache_events_total", {"outcome": outcome})
    return value or 0.0


def bypassed() -> float:
    return events("bypass")


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    # Our own server: this module kills it, so it must not be the session's shared one.
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="module")
async def app(ipc_index: Path, encoder: Encoder, redis: RedisServer) -> AsyncIterator[ServiceApp]:
    config = RetrievalConfig.from_env(
        {
            "RETRIEVAL_PORT": "0",
            "RETRIEVAL_METRICS_PORT": "0",
            "RETRIEVAL_GRACE_S": "1",
            "RETRIEVAL_INDEX_DIR": str(ipc_index),
            "RETRIEVAL_REDIS_URL": redis.url,
            "RETRIEVAL_CACHE_TTL_S": str(TTL_S),
        }
    )
    with pytest.MonkeyPatch.context() as patch:
        # The session's loaded model, rather than a second copy of it.
        patch.setattr(retrieval_server, "load_encoder", lambda *a, **k: encoder)
        service = retrieval_server.create_app(config)
        await service.start()
    yield service
    await service.stop(0)


@pytest.fixture
async def stub(app: ServiceApp) -> AsyncIterator[pb_grpc.RetrievalServiceStub]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
        yield pb_grpc.RetrievalServiceStub(channel)


async def retrieve(stub: pb_grpc.RetrievalServiceStub, query: str) -> pb.RetrievePassagesResponse:
    request = pb.RetrievePassagesRequest(query=query, top_k=5)
    return await stub.RetrievePassages(request, timeout=30)  # type: ignore[no-any-return]


class TestRedisCache:
    async def test_cache_second_identical_call_is_a_hit_with_identical_passages(
        self, stub: pb_grpc.RetrievalServiceStub
    ) -> None:
        query = "What is the punishment for criminal breach of trust?"
        first = await retrieve(stub, query)
        second = await retrieve(stub, query)
        assert (first.cache_hit, second.cache_hit) == (False, True)
        assert first.passages and list(second.passages) == list(first.passages)
        assert second.index_version == first.index_version
        assert [t.stage for t in second.timings if t.ran] == ["cache"]

    async def test_cache_entries_expire_after_the_configured_ttl(
        self, stub: pb_grpc.RetrievalServiceStub, redis: RedisServer
    ) -> None:
        client = redis.client()
        try:
            client.flushdb()
            await retrieve(stub, "Who is a public servant?")
            keys = client.keys("grounded:retrieval:*")
            assert len(keys) == 1
            ttl = client.ttl(keys[0])
        finally:
            client.close()
        assert TTL_S - 5 <= ttl <= TTL_S

    async def test_cache_outage_is_bypassed_then_recovered(
        self,
        stub: pb_grpc.RetrievalServiceStub,
        redis: RedisServer,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        caplog.set_level(logging.INFO, logger="services.common.redis_store")
        query = "Define dishonestly"
        assert not (await retrieve(stub, query)).cache_hit
        assert (await retrieve(stub, query)).cache_hit
        before = bypassed()

        redis.kill()
        outage = [await retrieve(stub, query) for _ in range(5)]
        outage += await asyncio.gather(*(retrieve(stub, f"{query} {i}") for i in range(5)))
        # Every call answered, none from the (dead) cache, each counted as a bypass.
        assert all(r.passages and not r.cache_hit for r in outage)
        assert bypassed() >= before + len(outage)
        down = [r for r in caplog.records if UNAVAILABLE_LOG in r.getMessage()]
        assert len(down) == 1, [r.getMessage() for r in caplog.records]

        redis.start()
        deadline = time.monotonic() + 20
        hit = False
        while not hit and time.monotonic() < deadline:
            await asyncio.sleep(0.2)  # the cache retries Redis after a back-off (1 s, doubling)
            await retrieve(stub, query)
            hit = (await retrieve(stub, query)).cache_hit
        assert hit, "the cache never came back after Redis restarted"
        assert any("available again" in r.getMessage() for r in caplog.records)
        assert len([r for r in caplog.records if UNAVAILABLE_LOG in r.getMessage()]) == 1


class TestRewrittenEntries:
    """The audit's finding: an entry edited with redis-cli ("three years" → "ninety days")
    was served as retrieved evidence, and synthesis's answer from it validated as GROUNDED
    (the validator checks an answer against the evidence synthesis sends it)."""

    QUERY = "What is the punishment for theft?"

    async def cached(
        self, stub: pb_grpc.RetrievalServiceStub, redis: RedisServer
    ) -> tuple[str, pb.RetrievePassagesResponse]:
        client = redis.client()
        try:
            client.flushdb()
            first = await retrieve(stub, self.QUERY)
            (key,) = client.keys("grounded:retrieval:*")
        finally:
            client.close()
        assert not first.cache_hit
        assert any("three years" in p.text for p in first.passages), first.passages
        return key.decode(), first

    def write(self, redis: RedisServer, key: str, entry: object) -> None:
        client = redis.client()
        try:
            client.set(key, json.dumps(entry), ex=TTL_S)
        finally:
            client.close()

    async def test_an_entry_with_the_text_rewritten_is_not_served(
        self, stub: pb_grpc.RetrievalServiceStub, redis: RedisServer
    ) -> None:
        key, first = await self.cached(stub, redis)
        # The entry as it held passages whole (version 1), each text edited as the audit did.
        chunks = [scored_from_proto(p) for p in first.passages]
        poisoned = {
            "v": 1,
            "intent": "punishment",
            "expanded_queries": [],
            "index_version": first.index_version,
            "timings": [{"stage": "dense", "ran": True, "duration_ms": 1.0}],
            "chunks": [
                {
                    "chunk": dataclasses.asdict(
                        dataclasses.replace(
                            s.chunk, text=s.chunk.text.replace("three years", "ninety days")
                        )
                    ),
                    "score": s.score,
                    "stages": dataclasses.asdict(s.stages),
                }
                for s in chunks
            ],
        }
        self.write(redis, key, poisoned)
        errors = events("error")

        second = await retrieve(stub, self.QUERY)

        assert not any("ninety days" in p.text for p in second.passages)
        assert not second.cache_hit and list(second.passages) == list(first.passages)
        assert events("error") == errors + 1
        assert (await retrieve(stub, self.QUERY)).cache_hit  # recomputed, written over

    async def test_an_entry_naming_a_passage_the_index_lacks_is_a_miss(
        self,
        stub: pb_grpc.RetrievalServiceStub,
        redis: RedisServer,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        key, first = await self.cached(stub, redis)
        client = redis.client()
        try:
            entry = json.loads(client.get(key) or b"{}")
        finally:
            client.close()
        assert "three years" not in json.dumps(entry)  # Redis holds no passage text
        entry["passages"][0]["id"] = "IPC_379_99"
        self.write(redis, key, entry)
        caplog.set_level(logging.WARNING, logger="services.common.redis_store")

        second = await retrieve(stub, self.QUERY)

        assert not second.cache_hit and list(second.passages) == list(first.passages)
        assert any("'IPC_379_99' is not in this index" in r.getMessage() for r in caplog.records)

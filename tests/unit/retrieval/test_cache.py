"""Tests for cache entries (ids and scores, never text) and the Redis cache: a hit is rebuilt
from the index, and an old-format, forged or poisoned entry is never served."""

from __future__ import annotations

import json
import logging

import pytest
from prometheus_client import REGISTRY

from services.common.evidence import StageScores
from services.common.intent import Intent
from services.retrieval.cache import (
    ENTRY_VERSION,
    CacheEntryError,
    RedisResultCache,
    decode_entry,
    encode_entry,
)
from services.retrieval.search import (
    CachedPassage,
    CachedResult,
    Searcher,
    SearchRequest,
    SearchSettings,
)
from tests.unit.retrieval.search_fakes import HashingEncoder, make_artifacts, statute_chunks


def entry() -> CachedResult:
    return CachedResult(
        passages=(
            CachedPassage("IPC_420_1", 1.9375, StageScores(0.61, 12.5, 0.9, 0.93)),
            CachedPassage("जाति_0", 0.1, StageScores()),
        ),
        intent=Intent.PUNISHMENT,
        expanded_queries=("punishment for cheating punished with imprisonment fine",),
    )


class TestCacheEntry:
    def test_entry_round_trip_keeps_every_field(self) -> None:
        assert decode_entry(encode_entry(entry())) == entry()

    def test_entry_decoded_from_str_too(self) -> None:
        assert decode_entry(encode_entry(entry()).decode()) == entry()

    def test_entry_holds_ids_and_scores_only(self) -> None:
        data = json.loads(encode_entry(entry()))
        assert set(data) == {"v", "intent", "expanded_queries", "passages"}
        assert set(data["passages"][0]) == {"id", "score", "stages"}

    def test_entry_of_another_version_is_rejected(self) -> None:
        data = json.loads(encode_entry(entry()))
        data["v"] = 999
        with pytest.raises(CacheEntryError, match="version"):
            decode_entry(json.dumps(data))

    def test_entry_of_the_old_layout_with_passage_text_is_rejected(self) -> None:
        # Version 1 held every Chunk field, and was served as read.
        old = {
            "v": 1,
            "intent": "punishment",
            "expanded_queries": [],
            "index_version": "abc",
            "timings": [],
            "chunks": [
                {
                    "chunk": {"semantic_id": "IPC_379_0", "text": "may extend to ninety days"},
                    "score": 1.0,
                    "stages": {},
                }
            ],
        }
        with pytest.raises(CacheEntryError, match="version 1"):
            decode_entry(json.dumps(old))

    def test_entry_with_text_beside_an_id_is_rejected(self) -> None:
        data = json.loads(encode_entry(entry()))
        data["passages"][0]["text"] = "may extend to ninety days"
        with pytest.raises(CacheEntryError, match="passage fields"):
            decode_entry(json.dumps(data))

    @pytest.mark.parametrize(
        "change",
        [
            lambda d: d["passages"][0].update(id=7),
            lambda d: d["passages"][0].update(score="1.0"),
            lambda d: d["passages"][0].update(score=True),
            lambda d: d["passages"][0]["stages"].update(dense="x"),
            lambda d: d["passages"][0]["stages"].pop("rerank"),
            lambda d: d.update(intent="no such intent"),
            lambda d: d.update(expanded_queries=[1]),
            lambda d: d.update(passages={}),
        ],
    )
    def test_entry_with_a_value_of_the_wrong_kind_is_rejected(self, change: object) -> None:
        data = json.loads(encode_entry(entry()))
        change(data)  # type: ignore[operator]
        with pytest.raises(CacheEntryError):
            decode_entry(json.dumps(data))

    @pytest.mark.parametrize("raw", [b"", b"not json", b"[]", b'{"v": 2}', b"null"])
    def test_entry_garbage_is_a_cache_entry_error(self, raw: bytes) -> None:
        with pytest.raises(CacheEntryError):
            decode_entry(raw)


class TestRedisResultCacheSettings:
    def test_ttl_below_one_second_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="ttl_s"):
            RedisResultCache("redis://127.0.0.1:1/0", ttl_s=0)

    def test_timeout_must_be_positive(self) -> None:
        with pytest.raises(ValueError, match="timeout_s"):
            RedisResultCache("redis://127.0.0.1:1/0", timeout_s=0)


class FakeRedis:
    """Redis as RedisStore uses it (GET and SET with a TTL), in a dict: the test writes into it
    what anyone able to reach an unauthenticated Redis could."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.ttls: dict[str, int] = {}

    def get(self, key: str) -> bytes | None:
        return self.data.get(key)

    def set(self, key: str, value: bytes, ex: int) -> None:
        self.data[key] = value
        self.ttls[key] = ex

    def close(self) -> None:
        return None


def events(outcome: str) -> float:
    value = REGISTRY.get_sample_value("grounded_retrieval_cache_events_total", {"outcome": outcome})
    return value or 0.0


class TestPoisonedEntries:
    """The audit's finding: an entry rewritten in Redis ("three years" → "ninety days") was
    served as retrieved evidence, and the answer built on it validated as GROUNDED."""

    REQUEST = SearchRequest("punishment for theft", top_k=3)

    @pytest.fixture
    def redis(self) -> FakeRedis:
        return FakeRedis()

    @pytest.fixture
    def searcher(self, redis: FakeRedis) -> Searcher:
        cache = RedisResultCache("redis://127.0.0.1:1/0", ttl_s=86_400)
        cache._store._client = redis  # type: ignore[assignment]
        artifacts = make_artifacts(statute_chunks(), HashingEncoder())
        return Searcher(artifacts, HashingEncoder(), SearchSettings(), cache)

    def stored(self, searcher: Searcher, redis: FakeRedis) -> tuple[str, dict[str, object]]:
        first = searcher.search(self.REQUEST)
        assert not first.cache_hit and "IPC_379_0" in [s.chunk.semantic_id for s in first.chunks]
        (key,) = redis.data
        assert redis.ttls[key] == 86_400
        assert searcher.search(self.REQUEST).cache_hit
        return key, json.loads(redis.data[key])

    def test_redis_holds_no_passage_text(self, searcher: Searcher, redis: FakeRedis) -> None:
        key, data = self.stored(searcher, redis)
        assert data["v"] == ENTRY_VERSION
        assert b"three years" not in redis.data[key]
        assert b"Punishment for theft" not in redis.data[key]

    def test_old_format_entry_with_poisoned_text_is_not_served(
        self, searcher: Searcher, redis: FakeRedis, caplog: pytest.LogCaptureFixture
    ) -> None:
        key, _ = self.stored(searcher, redis)
        text = next(c.text for c in statute_chunks() if c.semantic_id == "IPC_379_0")
        poisoned = {
            "v": 1,
            "intent": "punishment",
            "expanded_queries": [],
            "index_version": searcher.index_version,
            "timings": [],
            "chunks": [
                {
                    "chunk": {
                        "semantic_id": "IPC_379_0",
                        "doc_id": "IPC_379",
                        "text": text.replace("three years", "ninety days"),
                    },
                    "score": 2.0,
                    "stages": {"dense": None, "lexical": None, "fused": None, "rerank": None},
                }
            ],
        }
        redis.data[key] = json.dumps(poisoned).encode()
        errors = events("error")
        caplog.set_level(logging.WARNING, logger="services.common.redis_store")
        result = searcher.search(self.REQUEST)
        assert not result.cache_hit
        assert all("ninety" not in s.chunk.text for s in result.chunks)
        assert "three years" in next(
            s.chunk.text for s in result.chunks if s.chunk.semantic_id == "IPC_379_0"
        )
        assert events("error") == errors + 1
        assert any("dropping unusable cache entry" in r.getMessage() for r in caplog.records)
        assert json.loads(redis.data[key])["v"] == ENTRY_VERSION  # recomputed, written over

    def test_entry_rewritten_to_another_passage_is_served_with_the_index_text(
        self, searcher: Searcher, redis: FakeRedis
    ) -> None:
        key, data = self.stored(searcher, redis)
        data["passages"] = [
            {"id": "IPC_379_0", "score": 2.0, "stages": data["passages"][0]["stages"]}  # type: ignore[index]
        ]
        redis.data[key] = json.dumps(data).encode()
        hit = searcher.search(self.REQUEST)
        assert hit.cache_hit
        (only,) = hit.chunks
        assert only.chunk == next(c for c in statute_chunks() if c.semantic_id == "IPC_379_0")
        assert only.score == 2.0  # scores and order are the entry's: the remaining risk

    def test_forged_passage_id_is_a_miss_counted_and_logged(
        self, searcher: Searcher, redis: FakeRedis, caplog: pytest.LogCaptureFixture
    ) -> None:
        key, data = self.stored(searcher, redis)
        passages = data["passages"]
        assert isinstance(passages, list)
        passages[0]["id"] = "IPC_379_7"
        redis.data[key] = json.dumps(data).encode()
        before = {o: events(o) for o in ("hit", "miss", "error")}
        caplog.set_level(logging.WARNING, logger="services.common.redis_store")
        result = searcher.search(self.REQUEST)
        assert not result.cache_hit and result.chunks
        assert "IPC_379_7" not in [s.chunk.semantic_id for s in result.chunks]
        assert {o: events(o) - before[o] for o in before} == {"hit": 0, "miss": 0, "error": 1}
        (record,) = [r for r in caplog.records if "dropping unusable" in r.getMessage()]
        assert "passage 'IPC_379_7' is not in this index" in record.getMessage()
        assert searcher.search(self.REQUEST).cache_hit  # the recomputed entry replaced it

"""Tests for cache entries (encode/decode keeps provenance) and the Redis cache's own checks."""

from __future__ import annotations

import json

import pytest

from services.common.evidence import Chunk, ScoredChunk, StageScores
from services.common.intent import Intent
from services.retrieval.cache import (
    CacheEntryError,
    RedisResultCache,
    decode_result,
    encode_result,
)
from services.retrieval.search import SearchResult, StageTiming

FULL_CHUNK = Chunk(
    semantic_id="IPC_420_1",
    doc_id="IPC_420",
    text="Such a person shall be punished — with imprisonment “of either description”.",
    title="Cheating and dishonestly inducing delivery of property",
    section="420",
    act="IPC",
    act_name="Indian Penal Code, 1860",
    chapter="XVII",
    chapter_title="Of offences against property",
    sentence_index=1,
    char_start=87,
    char_end=162,
    context_before="Whoever cheats and thereby dishonestly induces the person deceived.",
    context_after="",
    page=12,
    url="https://example.org/ipc#420",
    extra={"source": "ipc.json", "जाति": "हिंदी"},
)


def result() -> SearchResult:
    return SearchResult(
        chunks=[
            ScoredChunk(
                FULL_CHUNK, 1.9375, StageScores(dense=0.61, lexical=12.5, fused=0.9, rerank=0.93)
            ),
            ScoredChunk(Chunk(semantic_id="X_0", doc_id="X", text="x"), 0.1, StageScores()),
        ],
        intent=Intent.PUNISHMENT,
        expanded_queries=["punishment for cheating punished with imprisonment fine"],
        timings=[StageTiming("cache", True, 0.12), StageTiming("dense", True, 16.5)],
        cache_hit=False,
        index_version="abc123",
    )


class TestCacheEntry:
    def test_entry_round_trip_keeps_every_field(self) -> None:
        original = result()
        assert decode_result(encode_result(original)) == original

    def test_entry_decoded_from_str_too(self) -> None:
        assert decode_result(encode_result(result()).decode()) == result()

    def test_entry_of_another_version_is_rejected(self) -> None:
        data = json.loads(encode_result(result()))
        data["v"] = 999
        with pytest.raises(CacheEntryError, match="version"):
            decode_result(json.dumps(data))

    def test_entry_missing_a_chunk_field_is_rejected(self) -> None:
        data = json.loads(encode_result(result()))
        del data["chunks"][0]["chunk"]["char_start"]
        with pytest.raises(CacheEntryError, match="chunk fields"):
            decode_result(json.dumps(data))

    @pytest.mark.parametrize("raw", [b"", b"not json", b"[]", b'{"v": 1}'])
    def test_entry_garbage_is_a_cache_entry_error(self, raw: bytes) -> None:
        with pytest.raises(CacheEntryError):
            decode_result(raw)


class TestRedisResultCacheSettings:
    def test_ttl_below_one_second_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="ttl_s"):
            RedisResultCache("redis://127.0.0.1:1/0", ttl_s=0)

    def test_timeout_must_be_positive(self) -> None:
        with pytest.raises(ValueError, match="timeout_s"):
            RedisResultCache("redis://127.0.0.1:1/0", timeout_s=0)

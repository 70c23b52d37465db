"""Redis adapter for the retrieval result cache: cache-aside, JSON entries, outages bypassed."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Final

from services.common.evidence import Chunk, ScoredChunk, StageScores
from services.common.intent import Intent
from services.common.metrics import CACHE_EVENTS
from services.common.redis_store import RedisStore
from services.retrieval.search import SearchResult, StageTiming

# Bump when the entry layout changes; entries of another version read as misses.
ENTRY_VERSION: Final = 1
_CHUNK_FIELDS: Final = frozenset(f.name for f in dataclasses.fields(Chunk))


class CacheEntryError(ValueError):
    """A cached entry cannot be decoded into a SearchResult."""


def encode_result(result: SearchResult) -> bytes:
    """JSON of a result with every Chunk field, so a hit carries full provenance."""
    payload = {
        "v": ENTRY_VERSION,
        "intent": result.intent.value,
        "expanded_queries": result.expanded_queries,
        "index_version": result.index_version,
        # Without ``skipped``: a result with a skipped stage is never cached, and an entry
        # stays readable by a replica that predates the field.
        "timings": [
            {"stage": t.stage, "ran": t.ran, "duration_ms": t.duration_ms} for t in result.timings
        ],
        "chunks": [
            {
                "chunk": dataclasses.asdict(s.chunk),
                "score": s.score,
                "stages": dataclasses.asdict(s.stages),
            }
            for s in result.chunks
        ],
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def decode_result(raw: bytes | str) -> SearchResult:
    """Inverse of ``encode_result``; raises CacheEntryError for anything it did not write."""
    try:
        data = json.loads(raw)
        if data.get("v") != ENTRY_VERSION:
            raise CacheEntryError(f"entry version {data.get('v')!r}, expected {ENTRY_VERSION}")
        return SearchResult(
            chunks=[_scored(item) for item in data["chunks"]],
            intent=Intent(data["intent"]),
            expanded_queries=[str(q) for q in data["expanded_queries"]],
            timings=[StageTiming(**t) for t in data["timings"]],
            cache_hit=False,
            index_version=str(data["index_version"]),
        )
    except CacheEntryError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CacheEntryError(f"undecodable cache entry: {exc}") from exc


def _scored(item: dict[str, Any]) -> ScoredChunk:
    fields = item["chunk"]
    if set(fields) != _CHUNK_FIELDS:
        raise CacheEntryError(f"chunk fields {sorted(fields)} differ from {sorted(_CHUNK_FIELDS)}")
    return ScoredChunk(
        chunk=Chunk(**fields), score=float(item["score"]), stages=StageScores(**item["stages"])
    )


class RedisResultCache:
    """ResultCache on Redis with a TTL; an unreachable or slow Redis is bypassed, never fatal
    (``services.common.redis_store.RedisStore`` holds the time-outs and outage back-off).

    Lookups are counted in ``grounded_retrieval_cache_events_total``: ``hit``, ``miss``,
    ``bypass`` (Redis unavailable: the call failed or the back-off is running) and ``error``
    (Redis answered with an error, or the entry could not be decoded).
    """

    def __init__(
        self,
        url: str,
        *,
        ttl_s: int = 86_400,
        timeout_s: float = 0.05,
        retry_after_s: float = 1.0,
        max_retry_after_s: float = 30.0,
    ) -> None:
        self._store = RedisStore(
            url,
            label="cache",
            ttl_s=ttl_s,
            timeout_s=timeout_s,
            retry_after_s=retry_after_s,
            max_retry_after_s=max_retry_after_s,
            on_event=_count,
        )
        self.ttl_s = ttl_s
        self.timeout_s = timeout_s

    @property
    def available(self) -> bool:
        """False from a failed call until a call succeeds again."""
        return self._store.available

    def get(self, key: str) -> SearchResult | None:
        return self._store.get(key, decode_result)

    def set(self, key: str, result: SearchResult) -> None:
        self._store.set(key, encode_result(result))

    def close(self) -> None:
        self._store.close()


def _count(outcome: str) -> None:
    CACHE_EVENTS.labels(outcome).inc()

"""Redis adapter for the retrieval result cache: cache-aside, JSON entries, outages bypassed."""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from typing import Any, Final

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from services.common.evidence import Chunk, ScoredChunk, StageScores
from services.common.intent import Intent
from services.common.metrics import CACHE_EVENTS
from services.retrieval.search import SearchResult, StageTiming

logger = logging.getLogger(__name__)

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
        "timings": [dataclasses.asdict(t) for t in result.timings],
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
    """ResultCache on Redis with a TTL; an unreachable or slow Redis is bypassed, never fatal.

    Every Redis call has ``timeout_s`` for connecting and answering, and redis-py's own retries
    are off: one slow call costs at most one timeout. After a failure the cache stays bypassed
    for a back-off (doubling from ``retry_after_s`` up to ``max_retry_after_s``); after it one
    call probes Redis while concurrent calls keep bypassing, so an outage costs one timeout per
    back-off rather than one per request. An outage is logged once when it starts and once when it
    ends. Lookups are counted in ``grounded_retrieval_cache_events_total``: ``hit``, ``miss``,
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
        if ttl_s < 1:
            raise ValueError(f"ttl_s must be >= 1, got {ttl_s}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.ttl_s = ttl_s
        self.timeout_s = timeout_s
        self._retry_after_s = retry_after_s
        self._max_retry_after_s = max(max_retry_after_s, retry_after_s)
        self._client = redis.Redis.from_url(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
            retry_on_timeout=False,
            health_check_interval=0,
        )
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._backoff = retry_after_s
        self._outage_started: float | None = None
        self._probing = False
        self._bypassed = 0

    @property
    def available(self) -> bool:
        """False from a failed call until a call succeeds again."""
        with self._lock:
            return self._outage_started is None

    def get(self, key: str) -> SearchResult | None:
        if not self._may_try():
            CACHE_EVENTS.labels("bypass").inc()
            return None
        try:
            raw = self._client.get(key)
        except redis.exceptions.ResponseError as exc:
            self._succeeded()  # Redis answered; it is up
            CACHE_EVENTS.labels("error").inc()
            logger.warning("cache read refused by redis: %s", exc)
            return None
        except (redis.exceptions.RedisError, OSError) as exc:
            self._failed(exc)
            CACHE_EVENTS.labels("bypass").inc()
            return None
        self._succeeded()
        if raw is None:
            CACHE_EVENTS.labels("miss").inc()
            return None
        try:
            result = decode_result(raw)
        except CacheEntryError as exc:
            CACHE_EVENTS.labels("error").inc()
            logger.warning("dropping undecodable cache entry %s: %s", key, exc)
            return None
        CACHE_EVENTS.labels("hit").inc()
        return result

    def set(self, key: str, result: SearchResult) -> None:
        if not self._may_try():
            return
        try:
            self._client.set(key, encode_result(result), ex=self.ttl_s)
        except redis.exceptions.ResponseError as exc:
            self._succeeded()
            logger.warning("cache write refused by redis: %s", exc)
            return
        except (redis.exceptions.RedisError, OSError) as exc:
            self._failed(exc)
            return
        self._succeeded()

    def close(self) -> None:
        self._client.close()

    def _may_try(self) -> bool:
        with self._lock:
            if self._outage_started is None:
                return True
            if not self._probing and time.monotonic() >= self._down_until:
                self._probing = True
                return True
            self._bypassed += 1
            return False

    def _failed(self, exc: BaseException) -> None:
        with self._lock:
            now = time.monotonic()
            self._bypassed += 1
            if self._outage_started is None:
                self._outage_started = now
                self._backoff = self._retry_after_s
                self._down_until = now + self._backoff
                logger.warning(
                    "redis cache unavailable, serving without it (retrying after %.1fs, "
                    "backing off up to %.0fs): %s",
                    self._retry_after_s,
                    self._max_retry_after_s,
                    exc,
                )
            elif self._probing:
                self._backoff = min(self._backoff * 2, self._max_retry_after_s)
                self._down_until = now + self._backoff
            # else: a call already in flight when the outage began; its back-off is running.
            self._probing = False

    def _succeeded(self) -> None:
        with self._lock:
            self._probing = False
            if self._outage_started is None:
                return
            logger.warning(
                "redis cache available again after %.1fs (%d lookups and writes bypassed)",
                time.monotonic() - self._outage_started,
                self._bypassed,
            )
            self._outage_started = None
            self._bypassed = 0
            self._backoff = self._retry_after_s

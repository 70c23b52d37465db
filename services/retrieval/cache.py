"""Redis adapter for the retrieval result cache: cache-aside, JSON entries, outages bypassed.

An entry holds a result's passage ids and scores, never passage text or provenance: Redis (no
authentication by default) is not trusted with what an answer is checked against. A hit is
rebuilt from the index in memory by ``Searcher``, which refuses an entry naming a passage the
index does not hold.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Final

from services.common.evidence import StageScores
from services.common.intent import Intent
from services.common.metrics import CACHE_EVENTS
from services.common.redis_store import RedisStore
from services.retrieval.search import CachedPassage, CachedResult, Resolve, SearchResult

# Bump when the entry layout changes; entries of another version read as errors (dropped).
# 2: passage ids and scores only (1 held every Chunk field, served as it was read).
ENTRY_VERSION: Final = 2
_ENTRY_KEYS: Final = frozenset({"v", "intent", "expanded_queries", "passages"})
_PASSAGE_KEYS: Final = frozenset({"id", "score", "stages"})
_STAGE_KEYS: Final = frozenset(f.name for f in dataclasses.fields(StageScores))


class CacheEntryError(ValueError):
    """A cached entry cannot be decoded into a CachedResult."""


def encode_entry(entry: CachedResult) -> bytes:
    """JSON of an entry: version, intent, expanded queries, and each passage's id and scores."""
    payload = {
        "v": ENTRY_VERSION,
        "intent": entry.intent.value,
        "expanded_queries": list(entry.expanded_queries),
        "passages": [
            {
                "id": p.semantic_id,
                "score": p.score,
                "stages": {name: getattr(p.stages, name) for name in sorted(_STAGE_KEYS)},
            }
            for p in entry.passages
        ],
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def decode_entry(raw: bytes | str) -> CachedResult:
    """Inverse of ``encode_entry``; raises CacheEntryError for anything it would not write
    (another version, another layout, a value of the wrong type)."""
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise CacheEntryError("not a JSON object")
        if data.get("v") != ENTRY_VERSION:
            raise CacheEntryError(f"entry version {data.get('v')!r}, expected {ENTRY_VERSION}")
        _keys(data, _ENTRY_KEYS, "entry")
        queries = data["expanded_queries"]
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise CacheEntryError("expanded_queries is not a list of strings")
        if not isinstance(data["passages"], list):
            raise CacheEntryError("passages is not a list")
        return CachedResult(
            passages=tuple(_passage(item) for item in data["passages"]),
            intent=Intent(data["intent"]),
            expanded_queries=tuple(queries),
        )
    except CacheEntryError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CacheEntryError(f"undecodable cache entry: {exc}") from exc


def _keys(data: dict[str, Any], expected: frozenset[str], what: str) -> None:
    if set(data) != expected:
        raise CacheEntryError(f"{what} fields {sorted(data)} differ from {sorted(expected)}")


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CacheEntryError(f"{what} is not a number")
    return float(value)


def _passage(item: Any) -> CachedPassage:
    if not isinstance(item, dict):
        raise CacheEntryError("a passage is not a JSON object")
    _keys(item, _PASSAGE_KEYS, "passage")
    stages = item["stages"]
    if not isinstance(stages, dict):
        raise CacheEntryError("stages is not a JSON object")
    _keys(stages, _STAGE_KEYS, "stages")
    if not isinstance(item["id"], str):
        raise CacheEntryError("a passage id is not a string")
    return CachedPassage(
        semantic_id=item["id"],
        score=_number(item["score"], "score"),
        stages=StageScores(
            **{
                name: None if value is None else _number(value, f"stages.{name}")
                for name, value in stages.items()
            }
        ),
    )


class RedisResultCache:
    """ResultCache on Redis with a TTL; an unreachable or slow Redis is bypassed, never fatal
    (``services.common.redis_store.RedisStore`` holds the time-outs and outage back-off).

    Lookups are counted in ``grounded_retrieval_cache_events_total``: ``hit``, ``miss``,
    ``bypass`` (Redis unavailable: the call failed or the back-off is running) and ``error``
    (Redis answered with an error, the entry could not be decoded, or the searcher refused it:
    a passage id the index does not hold, and the like). An entry refused is logged and the
    search runs as on a miss.
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

    def get(self, key: str, resolve: Resolve) -> SearchResult | None:
        return self._store.get(key, lambda raw: resolve(decode_entry(raw)))

    def set(self, key: str, entry: CachedResult) -> None:
        self._store.set(key, encode_entry(entry))

    def close(self) -> None:
        self._store.close()


def _count(outcome: str) -> None:
    CACHE_EVENTS.labels(outcome).inc()

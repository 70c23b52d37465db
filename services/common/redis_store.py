"""A Redis key-value store with TTLs whose outages are bypassed, never fatal (cache adapters)."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Final, TypeVar
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.connection import URL_QUERY_ARGUMENT_PARSERS, parse_url
from redis.retry import Retry

logger = logging.getLogger(__name__)

T = TypeVar("T")

# What a lookup found, for the caller's metrics: "hit", "miss", "bypass" (Redis unavailable: the
# call failed or the back-off is running) or "error" (Redis answered with an error, or the
# entry could not be decoded).
EventSink = Callable[[str], None]


def _ignore(_: str) -> None:
    return None


def url_problem(url: str) -> str | None:
    """What is wrong with a Redis URL as redis-py reads it (``redis.connection.parse_url``, the
    parser ``Redis.from_url`` uses), without connecting; None when nothing is. Also wrong: no
    host (``redis://`` would dial localhost), no socket path, a database that is not a number
    (redis-py drops it and uses database 0), and for redis:// and rediss:// an ``@`` after the
    host (a password holding an unencoded ``/``, ``?`` or ``#``: redis-py would dial a host
    taken from the password and send none).

    Never quotes the URL: redis-py's and urllib's errors may (``Port could not be cast to
    integer value as 'Ab3'`` is a password's first characters when it holds a ``/``), so each
    is said in fixed words of our own."""
    try:
        parsed = parse_url(url)  # type: ignore[no-untyped-call]  # untyped library
    except ValueError as error:
        return _parse_error(str(error), hint=_PASSWORD_HINT if "@" in url else "")
    parts = urlsplit(url)
    scheme = url.split(":", 1)[0].lower()
    if scheme != "unix" and "@" in f"{parts.path}?{parts.query}#{parts.fragment}":
        return "an '@' after the host" + _PASSWORD_HINT
    if scheme == "unix":
        return None if parsed.get("path") else "no socket path (unix:///path/to/redis.sock)"
    if not parsed.get("host"):
        return "no host (redis://host:6379/0)"
    database = parts.path.strip("/")
    if database and not database.isdigit():
        return f"the database {database!r} is not a number (redis://host:6379/0)"
    return None


_PASSWORD_HINT: Final = (
    " (a password holding '/', '?' or '#' must be percent-encoded: %2F, %3F, %23)"
)


def _parse_error(said: str, *, hint: str) -> str:
    """redis-py's or urllib's ValueError text ``said`` in words that quote nothing of the URL
    (``hint`` follows a port error, which an unencoded password causes)."""
    if said.startswith("Redis URL must specify"):
        return "the scheme is not redis://, rediss:// or unix://"
    if invalid := re.match(r"Invalid value for '([^']*)'", said):
        name = invalid.group(1)
        # Only a query parameter redis-py parses raises this: its name is redis-py's own.
        if name in URL_QUERY_ARGUMENT_PARSERS:
            return f"Invalid value for {name!r} (a query parameter)"
        return "an invalid query parameter value"
    if said.startswith("Port could not be cast"):
        return "the port is not a number" + hint
    if said.startswith("Port out of range"):
        return "the port is not from 0 to 65535" + hint
    return "not a URL redis-py can read" + hint


class RedisStore:
    """Bytes under string keys with a TTL; an unreachable or slow Redis is bypassed.

    Every Redis call has ``timeout_s`` for connecting and answering, and redis-py's own retries
    are off: one slow call costs at most one timeout. After a failure the store stays bypassed
    for a back-off (doubling from ``retry_after_s`` up to ``max_retry_after_s``); after it one
    call probes Redis while concurrent calls keep bypassing, so an outage costs one timeout per
    back-off rather than one per request. An outage is logged once when it starts and once when
    it ends, naming ``label`` (which cache it is). Calls block: async callers run them in a
    worker thread.
    """

    def __init__(
        self,
        url: str,
        *,
        label: str,
        ttl_s: int = 86_400,
        timeout_s: float = 0.05,
        retry_after_s: float = 1.0,
        max_retry_after_s: float = 30.0,
        on_event: EventSink = _ignore,
    ) -> None:
        if ttl_s < 1:
            raise ValueError(f"ttl_s must be >= 1, got {ttl_s}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.label = label
        self.ttl_s = ttl_s
        self.timeout_s = timeout_s
        self._on_event = on_event
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

    def get(self, key: str, decode: Callable[[bytes], T]) -> T | None:
        """The stored entry decoded, or None on a miss, an error or an outage (each reported).

        ``decode`` raises ``ValueError`` for an entry it cannot read or use; that entry is
        dropped (counted as ``error`` and logged with the reason).
        """
        if not self._may_try():
            self._on_event("bypass")
            return None
        try:
            raw = self._client.get(key)
        except redis.exceptions.ResponseError as exc:
            self._succeeded()  # Redis answered; it is up
            self._on_event("error")
            logger.warning("%s read refused by redis: %s", self.label, exc)
            return None
        except (redis.exceptions.RedisError, OSError) as exc:
            self._failed(exc)
            self._on_event("bypass")
            return None
        self._succeeded()
        if raw is None:
            self._on_event("miss")
            return None
        try:
            entry = decode(raw if isinstance(raw, bytes) else str(raw).encode())
        except ValueError as exc:
            self._on_event("error")
            logger.warning("dropping unusable %s entry %s: %s", self.label, key, exc)
            return None
        self._on_event("hit")
        return entry

    def set(self, key: str, value: bytes) -> None:
        """Store ``value`` for ``ttl_s`` seconds; a failure is logged (outages once) and dropped."""
        if not self._may_try():
            return
        try:
            self._client.set(key, value, ex=self.ttl_s)
        except redis.exceptions.ResponseError as exc:
            self._succeeded()
            logger.warning("%s write refused by redis: %s", self.label, exc)
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
                    "redis %s unavailable, serving without it (retrying after %.1fs, "
                    "backing off up to %.0fs): %s",
                    self.label,
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
            logger.info(  # the outage's start was the warning
                "redis %s available again after %.1fs (%d lookups and writes bypassed)",
                self.label,
                time.monotonic() - self._outage_started,
                self._bypassed,
            )
            self._outage_started = None
            self._bypassed = 0
            self._backoff = self._retry_after_s

"""Addresses as logs and messages may show them: one definition for every client that names
an endpoint (synthesis's generator and its gRPC clients, the judge). A caller has no use for a
pod's IP or a dependency's host name, and a URL's userinfo or query string may hold a
credential."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import SplitResult, urlsplit, urlunsplit

# A peer address in grpc-core's own error text ("last error: UNKNOWN: ipv4:10.1.2.3:50053:
# Failed to connect ..."), and a bare IP address (an HTTP library's words), with any port.
_PEER_ADDRESS: Final = re.compile(r"\b(?:ipv4|ipv6|unix|unix-abstract|vsock):\S*?(?=:?\s|:?$|,)")
_IP_ADDRESS: Final = re.compile(
    r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?(?![\w.])|\[[0-9A-Fa-f:.%]+\](?::\d+)?"
)
ADDRESS: Final = "<address>"


def without_addresses(text: str) -> str:
    """``text`` with every peer address and IP address written ``<address>``."""
    return _IP_ADDRESS.sub(ADDRESS, _PEER_ADDRESS.sub(ADDRESS, text))


def whole_names(forms: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern for any of ``forms`` (a target as configured, a URL, a host name), each a whole
    word, with any port after it, without regard to case; None when there is none."""
    names = sorted(set(forms) - {""}, key=len, reverse=True)
    if not names:
        return None
    alternatives = "|".join(re.escape(f) for f in names)
    return re.compile(rf"(?<![\w.-])(?:{alternatives})(?::\d+)?(?![\w.-])", re.IGNORECASE)


def split_url(url: str) -> SplitResult | None:
    """``url``'s parts, or None when it does not parse (a port that is not a number)."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        return None
    return parts


def display_url(url: str) -> str:
    """``url`` as a log or an error may name it: without ``user:password@``, query string or
    fragment (either may hold a credential, e.g. ``?api-key=...``).

    The query starts at the first ``?`` or ``#``. An ``@`` before it ends the userinfo: only the
    scheme and what follows the last such ``@`` are kept, since a password holding ``/``
    unencoded (``redis://:Ab3/xY9@redis:6379/0``) ends urlsplit's netloc early, and one written
    without ``//`` or without a scheme (``redis:/u:pw@host``, ``:pw@host:6379``) has no netloc
    at all. An ``@`` only after the first ``?`` or ``#`` is either in the query
    (``redis://redis:6379/0?password=hunter@2secret``) or ends a password holding ``?`` or
    ``#`` unencoded (``redis://u:Ab3?xY9@redis:6379/0``), and nothing tells which: only the
    scheme and the name before the first ``:`` or ``/`` are kept (``redis://redis``; the user
    name ``redis://u`` in the second reading), never a port or path, where the second reading
    holds the password's first characters (``u:6380?xY9@host``), nor what follows the ``@``,
    where the first holds the query's (keeping what followed the last ``@`` showed
    ``redis://2secret``)."""
    head = _QUERY_START.split(url, maxsplit=1)[0]
    if "@" in head:
        return _scheme(url) + head.rsplit("@", 1)[-1]
    if "@" in url:
        scheme = _scheme(url)
        name = _NAME.match(head, len(scheme))
        return scheme + (name.group() if name else "")
    parts = split_url(head)
    if parts is None:
        # Not a URL urlsplit reads (a port that is not a number): the same parts left out.
        return head
    return urlunsplit(parts._replace(query="", fragment=""))


def _scheme(url: str) -> str:
    scheme = _SCHEME.match(url)
    return scheme.group(0) if scheme else ""


_QUERY_START: Final = re.compile(r"[?#]")
# A host name or user name as written: to the first ":" or "/" (an IPv6 literal whole).
_NAME: Final = re.compile(r"\[[^\]/]*\]|[^:/]*")


# A URL's scheme as display_url keeps it: only when a "/" follows (``redis://``, ``redis:/``),
# since in ``user:password@host`` the text before the first ":" is the user name, not a scheme.
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/+")

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
    """``url`` as a log may name it: without ``user:password@``, query string or fragment
    (either may hold a credential, e.g. ``?api-key=...``)."""
    parts = split_url(url)
    if parts is None:
        # Not a URL urlsplit reads (a port that is not a number): the same parts left out.
        scheme, sep, rest = url.partition("://")
        netloc, slash, path = re.split(r"[?#]", rest, maxsplit=1)[0].partition("/")
        return f"{scheme}{sep}{netloc.rsplit('@', 1)[-1]}{slash}{path}"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=netloc, query="", fragment=""))

"""Endpoint URLs as logs and messages may show them: one definition for every client of an
OpenAI-compatible endpoint (synthesis's generator, the judge)."""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit, urlunsplit


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
        return "<unparsable base URL>"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=netloc, query="", fragment=""))

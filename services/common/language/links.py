"""Links in text: what the validator requires an answer's evidence to hold.

A link in an answer is a claim of its own (where to read more), and a Markdown image or an
HTML tag in a rendered answer makes the reader's client fetch it: ``![x](https://host/p.png?
q=secret)`` would leak whatever the query carries. So every link a sentence holds must appear
in the evidence it cites. Pure functions; no service imports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

# A scheme-qualified address or a bare "www." one, up to whitespace or a closing delimiter.
_LINK: Final = re.compile(r"(?:\b[a-z][a-z0-9+.-]*://|\bwww\.)[^\s<>\"'`)\]}]+", re.IGNORECASE)
# Punctuation that ends a sentence or clause after a link rather than belonging to it.
_TRAILING: Final = ".,;:!?"


def links(text: str) -> list[str]:
    """The links in ``text``, in order, without the punctuation that follows them."""
    return [m.group().rstrip(_TRAILING) for m in _LINK.finditer(text)]


def links_not_in(text: str, evidence: Sequence[str]) -> list[str]:
    """The links of ``text`` that none of ``evidence`` holds (compared without regard to case,
    each once)."""
    found = links(text)
    if not found:
        return []
    held = [e.casefold() for e in evidence]
    missing: list[str] = []
    for link in dict.fromkeys(found):
        key = link.casefold()
        if not any(key in e for e in held):
            missing.append(link)
    return missing

"""How a text names a document: by its title, as a name (issue 13).

A multi-document answer often chains documents: the first document's sentence names the second
("... was paid for by John Dustin Archbold"). Synthesis uses this twice: retrieval's evidence may
take a candidate from a document the evidence names (``SYNTHESIS_PROMOTE_NAMED``), and the
extractive generator quotes a document its answer names (``SYNTHESIS_EXTRACTIVE_BRIDGE_TITLES``).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Final

_DISAMBIGUATOR: Final = re.compile(r"\s*\([^()]*\)\s*$")
MIN_NAME_CHARS: Final = 3


def title_name(title: str) -> str:
    """The name a document's title gives it, without a trailing disambiguator: "Tinted
    Windows" for "Tinted Windows (band)"; empty when shorter than ``MIN_NAME_CHARS``."""
    name = _DISAMBIGUATOR.sub("", title).strip()
    return name if len(name) >= MIN_NAME_CHARS else ""


def names(text: str, name: str, *, fold_case: bool = False) -> bool:
    """Whether ``text`` names ``name`` as whole words (case-sensitive unless ``fold_case``: a
    name keeps its capitals, so "tinted windows" does not name the band)."""
    if not name:
        return False
    pattern = rf"(?<!\w){re.escape(name)}(?!\w)"
    return re.search(pattern, text, re.IGNORECASE if fold_case else 0) is not None


def names_beyond_question(
    text: str, title: str, question: str, *, own_titles: Collection[str] = ()
) -> bool:
    """Whether ``text`` names the document titled ``title`` and ``question`` does not (in any
    case): a document the question names is what it asks about, not a bridge to it. Nor is a
    document titled like one of ``own_titles``, the titles of the documents ``text`` comes
    from (another paragraph of the same article)."""
    if title in own_titles:
        return False
    name = title_name(title)
    return names(text, name) and not names(question, name, fold_case=True)

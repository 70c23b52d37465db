"""How a statute section's passages are laid out: its operative text, its lists, its qualifiers.

A section is stored one sentence a passage (IPC_376_0, IPC_376_1, ...). Its first passages are
its operative text (what it defines or punishes); a passage opening with "Provided",
"Explanation", "Exception" or "Illustration" starts a part that qualifies them. A list is a
lead-in ("... namely:", "... the following seven descriptions:", or a lead-in and its first item
run into one sentence, "... are designated as "grievous": Emasculation.") and the passages after
it, up to the next such part. A lead-in quoted without its items, or an item without its
lead-in, misleads: "What is grievous hurt?" was answered with the lead-in and the first of eight
kinds, "What does section 375 say?" with an Explanation and a proviso (docs/EVALUATION.md, "Then
L"). Retrieval (what a named section's group holds) and synthesis (what the evidence holds, what
the extractive generator quotes together) read the layout here, once.

Pure functions over passage texts; no service imports.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Final

from services.common.language.sentences import is_lead_in, sentences

# At most this many items follow a lead-in: a longer run is no list this module can tell
# (nothing marks where it ends), so its lead-in is never quoted. The IPC's longest list whose
# items are stored, s.320's "grievous" hurts and s.375's seven descriptions, has seven.
MAX_LIST_ITEMS: Final = 10
# A named section's operative text is at most its first three passages (s.376's sub-sections
# (1) to (3)); a longer section's later passages are found by the question's words as before.
MAX_OPERATIVE_PASSAGES: Final = 3

# A part that qualifies the operative text: a proviso, an Explanation, an Exception, an
# Illustration (the Code capitalises each; a word inside a sentence is not one).
_PROVISO = r"Provided"
_PART = re.compile(rf"\s*(?:{_PROVISO}|Explanations?|Exceptions?|Illustrations?)\b")
_OPENS_PROVISO = re.compile(rf"\s*{_PROVISO}\b")
# A lead-in that ends with its cue word rather than a colon ("..., namely").
_CUE_END = re.compile(
    r"\b(?:namely|following|as follows|that is to say)\s*[,:;—–-]*$", re.IGNORECASE
)
# A lead-in and its first item in one sentence: a colon after at least five words, then a
# capital ("... are designated as "grievous": Emasculation."; "... to defend: His own body").
# A colon after a short label is a defined term, not a list ("“Wrongful gain”: Wrongful gain
# is gain ...").
_JOINED = re.compile(r"(?:[^\s:]+\s+){4,}[^\s:]*:\s+[\"“‘(]?[A-Z]")


def opens_part(text: str) -> bool:
    """A passage that opens a proviso, Explanation, Exception or Illustration."""
    return _PART.match(text) is not None


def opens_proviso(text: str) -> bool:
    """A passage that opens a proviso ("Provided that no agreement ... shall amount to a
    criminal conspiracy unless ..."): it limits its section's operative text, so it is never
    that section's definition (rule BH)."""
    return _OPENS_PROVISO.match(text) is not None


def opens_list(sentence: str) -> bool:
    """A sentence that introduces a list: it ends with a colon (``is_lead_in``) or with its cue
    word ("namely", "following", "as follows", "that is to say"), or it is a lead-in and the
    list's first item run into one sentence."""
    stripped = sentence.rstrip()
    return (
        is_lead_in(stripped)
        or _CUE_END.search(stripped) is not None
        or _JOINED.match(stripped) is not None
    )


def _last_sentence(text: str) -> str:
    found = sentences(text)
    return found[-1] if found else ""


def list_spans(texts: Mapping[int, str]) -> list[range]:
    """The lists among a section's passages, by position (``texts``: position → text; the
    positions a caller holds, not necessarily all of the section's).

    Each list is a range from its lead-in through its last item: the passages that follow the
    lead-in, without a gap, up to the next part (a proviso, an Explanation …), the next
    lead-in or the last position held. A lead-in with no item after it, or with more than
    ``MAX_LIST_ITEMS``, has a range of the lead-in alone.
    """
    spans: list[range] = []
    for position in sorted(texts):
        if not opens_list(_last_sentence(texts[position])):
            continue
        end = position + 1
        while end in texts and not opens_part(texts[end]) and not opens_list(texts[end]):
            end += 1
        items = end - position - 1
        spans.append(range(position, end if 0 < items <= MAX_LIST_ITEMS else position + 1))
    return spans


def operative_positions(texts: Mapping[int, str]) -> range:
    """A section's operative text: its first passages, before the first that opens a part, at
    most ``MAX_OPERATIVE_PASSAGES``; empty when position 0 is not among ``texts``."""
    end = 0
    while end < MAX_OPERATIVE_PASSAGES and end in texts and not opens_part(texts[end]):
        end += 1
    return range(end)


def completing(
    texts: Mapping[int, str], held: Collection[int], *, operative: bool, lists: bool
) -> list[int]:
    """Positions of a section's passages (of ``texts``) that complete the ``held`` ones: its
    operative text (``operative``: the question names the section) and every whole list a
    held or added passage belongs to (``lists``), in order, none of ``held``."""
    wanted = set(held)
    if operative:
        wanted.update(operative_positions(texts))
    if lists:
        for span in list_spans(texts):
            if len(span) > 1 and wanted.intersection(span):
                wanted.update(span)
    return sorted(wanted.difference(held))


def is_list_lead_in(texts: Mapping[int, str], position: int) -> bool:
    """The passage at ``position`` opens a list (whether or not its items are held)."""
    return position in texts and opens_list(_last_sentence(texts[position]))

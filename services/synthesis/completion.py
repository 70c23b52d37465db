"""The evidence made whole: a named section's operative text and a statute list's every passage.

The evidence is the request's ``top_k`` best passages. A section named in the question may rank
its provisos above its operative text ("What is the punishment under section 376?" ranked the
proviso "any fine imposed under this sub-section shall be paid to the victim" first), and a list
does not fit in ``top_k`` (s.320's eight kinds of grievous hurt). Retrieval returns what
completes a section after every ranked passage (docs/RETRIEVAL.md, "A statute section's group
is completed"), so the ``top_k`` evidence is what it was without it; ``complete_evidence`` adds
it from the candidate pool after them, so the evidence can hold more than ``top_k`` passages,
never more than the pool. What completes what is
``services/common/language/provisions.py``'s, the one definition retrieval reads too.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from services.common.evidence import ScoredChunk
from services.common.language.key_terms import chunk_section
from services.common.language.provisions import completing


def _sections(passages: Sequence[ScoredChunk]) -> dict[str, dict[int, ScoredChunk]]:
    """The statute passages among ``passages`` by document and position (the first of a pair)."""
    found: dict[str, dict[int, ScoredChunk]] = {}
    for scored in passages:
        chunk = scored.chunk
        if chunk.act and chunk.section:
            found.setdefault(chunk.doc_id, {}).setdefault(chunk.sentence_index, scored)
    return found


def complete_evidence(
    evidence: Sequence[ScoredChunk],
    pool: Sequence[ScoredChunk],
    named_sections: Collection[str],
    *,
    operative: bool,
    lists: bool,
    limit: int,
) -> list[ScoredChunk]:
    """``evidence`` followed by the ``pool``'s passages that complete its statute sections:
    the operative text of a section in ``named_sections`` (``operative``; sections as
    ``chunk_section`` writes them) and every list an evidence passage belongs to (``lists``).
    Added passages follow the evidence, a document's in sentence order, a section's all or
    none, while the evidence stays within ``limit`` passages (the largest ``top_k``)."""
    if not (operative or lists):
        return list(evidence)
    held = _sections(evidence)
    available = _sections([*evidence, *pool])
    added: list[ScoredChunk] = []
    for doc_id, own in held.items():
        passages = available[doc_id]
        named = chunk_section(next(iter(own.values())).chunk) in named_sections
        texts = {index: scored.chunk.text for index, scored in passages.items()}
        found = completing(texts, own, operative=operative and named, lists=lists)
        more = [passages[index] for index in found]
        if len(evidence) + len(added) + len(more) <= limit:
            added.extend(more)
    return [*evidence, *added]

"""Cross-chunk aggregation: relevant sentences of one document returned together, in order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from services.common.evidence import ScoredChunk

DEFAULT_PER_DOC_CAP: Final = 3
DEFAULT_SIBLING_RATIO: Final = 0.5

# The passages that complete a document's group (its ranked members, best first): a named
# section's operative text, the whole of a list a member belongs to (search.py builds it from
# the index; services/common/language/provisions.py says what they are).
Completion = Callable[[Sequence[ScoredChunk]], Sequence[ScoredChunk]]


def aggregate(
    ranked: Sequence[ScoredChunk],
    *,
    top_k: int,
    per_doc_cap: int = DEFAULT_PER_DOC_CAP,
    sibling_ratio: float = DEFAULT_SIBLING_RATIO,
    complete: Completion | None = None,
) -> list[ScoredChunk]:
    """Group ``ranked`` (best first) by document and return at most ``top_k`` chunks.

    A document's group opens at the rank of its best chunk. A later chunk of the same document
    joins while the group is below ``per_doc_cap`` and it scores at least ``sibling_ratio``
    times the group's best score; every other chunk of that document is dropped, so the slots
    go to other documents. Groups keep the order of their best chunks; inside a group chunks
    follow sentence order, so a reader sees the passage as written (each chunk still carries
    its own score and context). When the last group does not fit, its best members are kept.

    ``complete`` gives the passages that complete a group (none of its members). They come
    after every ranked group, outside ``per_doc_cap``, in the order of the groups they complete
    (each group's in sentence order), taking the place of the last ranked passages within
    ``top_k``: the first ranked passages are the ones a search without them returns.
    """
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    if per_doc_cap < 1:
        raise ValueError(f"per_doc_cap must be >= 1, got {per_doc_cap}")
    groups: dict[str, list[ScoredChunk]] = {}
    for scored in ranked:
        group = groups.get(scored.chunk.doc_id)
        if group is None:
            groups[scored.chunk.doc_id] = [scored]
            continue
        if len(group) < per_doc_cap and scored.score >= sibling_ratio * group[0].score:
            group.append(scored)

    out: list[ScoredChunk] = []
    completing: list[ScoredChunk] = []
    for group in groups.values():
        room = top_k - len(out) - len(completing)
        if room <= 0:
            break
        kept = group[:room]  # members are in rank order, so this keeps the best ones
        out.extend(sorted(kept, key=lambda s: s.chunk.sentence_index))
        if complete is not None and len(kept) == len(group):
            more = sorted(complete(group), key=lambda s: s.chunk.sentence_index)
            completing.extend(more[: top_k - len(out) - len(completing)])
    return [*out, *completing]

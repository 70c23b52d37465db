"""Documents served whole by id (``GetDocument``), from the index's chunks."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from services.common.documents import DOCUMENT_RESOURCE_TYPE
from services.common.errors import NotFoundError
from services.common.evidence import Chunk

_PASSAGE_SUFFIX = re.compile(r"(.+)_\d+")


class DocumentIndex:
    """Each document's chunks in sentence order, looked up by exact doc_id.

    A miss names the document the caller probably meant: the document of a passage id
    (``IPC_420_2`` → ``IPC_420``, also past its last passage), or the id in other case or
    without surrounding spaces (``ipc_420``, `` IPC_420``). The caller gets it in the
    NOT_FOUND message; nothing is served under a name it was not asked for.
    """

    def __init__(self, chunks: Iterable[Chunk]) -> None:
        by_doc: dict[str, list[Chunk]] = {}
        self._doc_of_passage: dict[str, str] = {}
        for chunk in chunks:
            by_doc.setdefault(chunk.doc_id, []).append(chunk)
            self._doc_of_passage[chunk.semantic_id] = chunk.doc_id
        self._by_doc: dict[str, tuple[Chunk, ...]] = {
            doc_id: tuple(sorted(found, key=lambda c: c.sentence_index))
            for doc_id, found in by_doc.items()
        }
        # Of ids that differ only in case, the hint names the first in sorted order.
        self._folded: dict[str, str] = {}
        for doc_id in sorted(self._by_doc):
            self._folded.setdefault(doc_id.casefold(), doc_id)
        self._folded_passages: dict[str, str] = {}
        for sid in sorted(self._doc_of_passage):
            self._folded_passages.setdefault(sid.casefold(), self._doc_of_passage[sid])

    def __len__(self) -> int:
        return len(self._by_doc)

    def get(self, doc_id: str) -> Sequence[Chunk]:
        """The document's chunks; ``NotFoundError`` (with a hint) when the index has none."""
        found = self._by_doc.get(doc_id)
        if found is not None:
            return found
        hint = self._meant(doc_id)
        raise NotFoundError(
            f"no document {doc_id!r} in the index"
            + (f"; did you mean {hint!r}?" if hint else " (ids are exact, e.g. 'IPC_420')"),
            resource_type=DOCUMENT_RESOURCE_TYPE,
            resource_name=doc_id,
        )

    def _meant(self, doc_id: str) -> str | None:
        stripped = doc_id.strip()
        if stripped in self._doc_of_passage:
            return self._doc_of_passage[stripped]
        folded = stripped.casefold()
        found = self._folded.get(folded) or self._folded_passages.get(folded)
        if found is None and (passage := _PASSAGE_SUFFIX.fullmatch(folded)):
            # A passage id past the document's last sentence ("IPC_420_7").
            found = self._folded.get(passage.group(1))
        return found

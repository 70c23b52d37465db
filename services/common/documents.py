"""Documents as served by id (``GetDocument``) and listed (``ListDocuments``): the request rules
and the text a citation's offsets point into. One definition for retrieval, which serves
documents, and synthesis, which checks a request before passing it on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from services.common.errors import FieldViolation, IndexIntegrityError, InvalidInputError
from services.common.evidence import MAX_ID_CHARS, Chunk
from services.common.language.text import NOT_BLANK, is_blank

# ResourceInfo.resource_type of a NOT_FOUND document (the proto message's full name).
DOCUMENT_RESOURCE_TYPE: Final = "grounded.type.v1.Document"


def doc_id_violations(doc_id: str, field: str = "doc_id") -> list[FieldViolation]:
    """What is wrong with a requested doc_id before any lookup (empty, too long)."""
    if is_blank(doc_id):
        return [FieldViolation(field, f"{NOT_BLANK}; give a document id such as 'IPC_420'")]
    if len(doc_id) > MAX_ID_CHARS:
        return [
            FieldViolation(field, f"must be at most {MAX_ID_CHARS} characters (got {len(doc_id)})")
        ]
    return []


def filter_value_violations(field: str, values: Sequence[str]) -> list[FieldViolation]:
    """Filter values (act codes, document ids) longer than any id may be, each named with its
    index (``filters.acts[2]``). RetrievePassages' ``filters`` and ListDocuments' ``acts`` are
    checked with it, at retrieval and at synthesis before it passes a request on, so that a
    value is never echoed whole in an error, and a megabyte filter value is the caller's bad
    input at the front door rather than a dependency failure.

    Values are not stripped or folded (filters are exact), and the number of values is each
    request's own rule."""
    return [
        FieldViolation(
            f"{field}[{i}]", f"must be at most {MAX_ID_CHARS} characters (got {len(value):,})"
        )
        for i, value in enumerate(values)
        if len(value) > MAX_ID_CHARS
    ]


# ListDocuments' page: its default and largest size, and how many acts it may be limited to.
DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 500
MAX_LIST_ACTS: Final = 100


def list_violations(page_size: int, acts: Sequence[str]) -> list[FieldViolation]:
    """What is wrong with a ListDocuments request before the index is asked (the page size, the
    number of acts); unknown acts and foreign page tokens are the index's to report."""
    found: list[FieldViolation] = []
    if not 0 <= page_size <= MAX_PAGE_SIZE:
        found.append(
            FieldViolation(
                "page_size",
                f"must be between 0 (the default, {DEFAULT_PAGE_SIZE}) and {MAX_PAGE_SIZE} "
                f"(got {page_size})",
            )
        )
    if len(acts) > MAX_LIST_ACTS:
        found.append(FieldViolation("acts", f"must hold at most {MAX_LIST_ACTS} values"))
    else:
        found += filter_value_violations("acts", acts)
    return found


def require_list(page_size: int, acts: Sequence[str]) -> int:
    """The page size to use (0 → the default), or ``InvalidInputError`` naming what is wrong."""
    violations = list_violations(page_size, acts)
    if violations:
        raise InvalidInputError(violations)
    return page_size or DEFAULT_PAGE_SIZE


def require_doc_id(doc_id: str) -> str:
    """``doc_id`` as sent (ids are exact), or ``InvalidInputError`` naming what is wrong."""
    violations = doc_id_violations(doc_id)
    if violations:
        raise InvalidInputError(violations)
    return doc_id


def document_text(chunks: Sequence[Chunk]) -> str:
    """The document's text from its sentences, each at its offsets.

    The index keeps the sentences, not what lies between them, which the chunker leaves only
    where the source has whitespace (``chunking.py``: every non-blank character is in some
    sentence); each such gap becomes as many spaces, so ``text[c.char_start:c.char_end] ==
    c.text`` for every chunk. Chunks whose offsets disagree with their text, or overlap, are
    an index that cannot be served as a document: ``IndexIntegrityError``.
    """
    parts: list[str] = []
    cursor = 0
    for chunk in sorted(chunks, key=lambda c: c.sentence_index):
        if chunk.char_end - chunk.char_start != len(chunk.text) or chunk.char_start < cursor:
            raise IndexIntegrityError(
                f"document {chunk.doc_id}: passage {chunk.semantic_id} has offsets "
                f"{chunk.char_start}-{chunk.char_end} that do not fit its text "
                f"({len(chunk.text)} characters) after the passage before it (ending at "
                f"{cursor}); rebuild the index",
                metadata={"doc_id": chunk.doc_id, "semantic_id": chunk.semantic_id},
            )
        parts.append(" " * (chunk.char_start - cursor))
        parts.append(chunk.text)
        cursor = chunk.char_end
    return "".join(parts)

"""Documents served whole by id (``GetDocument``), from the index's chunks."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from services.common.documents import DOCUMENT_RESOURCE_TYPE
from services.common.errors import FieldViolation, InvalidInputError, NotFoundError
from services.common.evidence import Chunk

_PASSAGE_SUFFIX = re.compile(r"(.+)_\d+")
# Between an act and its section in a citation's locator or by hand: "IPC/420", "IPC 420".
_SEPARATORS = re.compile(r"[\s/]+")
# A citation locator's passage part: "IPC/420#0".
_LOCATOR_PASSAGE = re.compile(r"#\d+$")


@dataclass(frozen=True, slots=True)
class DocumentPage:
    """One page of ListDocuments: each document's chunks, the token for the next page ("" on
    the last) and how many documents the whole listing holds."""

    documents: tuple[Sequence[Chunk], ...]
    next_page_token: str
    total_size: int


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
            by_doc.setdefault(chunk.doc_id, []).append(chunk)  # first seen, first listed
            self._doc_of_passage[chunk.semantic_id] = chunk.doc_id
        self._by_doc: dict[str, tuple[Chunk, ...]] = {
            doc_id: tuple(sorted(found, key=lambda c: c.sentence_index))
            for doc_id, found in by_doc.items()
        }
        self._order: list[str] = list(by_doc)  # index order: ListDocuments pages through it
        # Of ids that differ only in case, the hint names the first in sorted order.
        self._folded: dict[str, str] = {}
        for doc_id in sorted(self._by_doc):
            self._folded.setdefault(doc_id.casefold(), doc_id)
        self._folded_passages: dict[str, str] = {}
        for sid in sorted(self._doc_of_passage):
            self._folded_passages.setdefault(sid.casefold(), self._doc_of_passage[sid])
        # Ids by their last "_" part ("420" -> IPC_420, CRPC_420), for a bare section number.
        self._by_last_part: dict[str, list[str]] = {}
        for folded, doc_id in self._folded.items():
            if "_" in folded:
                self._by_last_part.setdefault(folded.rsplit("_", 1)[1], []).append(doc_id)

    def __len__(self) -> int:
        return len(self._by_doc)

    def page(
        self, acts: Sequence[str], page_token: str, size: int, *, index_version: str
    ) -> DocumentPage:
        """``size`` documents in index order (of ``acts`` only, when given) from where
        ``page_token`` left off. A token is bound to the acts and the index it was made for:
        another is INVALID_ARGUMENT on ``page_token``, never a page of something else."""
        chosen = sorted(set(acts))
        wanted = set(chosen)
        listed = (
            self._order
            if not chosen
            else [d for d in self._order if self._by_doc[d][0].act in wanted]
        )
        start = _read_token(page_token, chosen, index_version) if page_token else 0
        if page_token and not start < len(listed):
            raise _bad_token(f"points past the listing's {len(listed)} documents")
        end = min(start + size, len(listed))
        more = end < len(listed)
        return DocumentPage(
            documents=tuple(self._by_doc[d] for d in listed[start:end]),
            next_page_token=_make_token(end, chosen, index_version) if more else "",
            total_size=len(listed),
        )

    def get(self, doc_id: str) -> Sequence[Chunk]:
        """The document's chunks; ``NotFoundError`` (with a hint) when the index has none."""
        found = self._by_doc.get(doc_id)
        if found is not None:
            return found
        hint = self.meant(doc_id)
        raise NotFoundError(
            f"no document {doc_id!r} in the index"
            + (f"; did you mean {hint!r}?" if hint else " (ids are exact, e.g. 'IPC_420')"),
            resource_type=DOCUMENT_RESOURCE_TYPE,
            resource_name=doc_id,
        )

    def meant(self, doc_id: str) -> str | None:
        """The document an id that is not one probably names: a passage id's document, the
        same id in another case, with spaces or invisible characters around it, or written as
        a citation's locator ("IPC/420", "IPC/420#0", "IPC 420"), a passage past the last
        sentence, or a bare section number that one document alone has ("420")."""
        visible = "".join(
            " " if ch.isspace() else ch for ch in doc_id if ch.isprintable() or ch.isspace()
        ).strip()
        if visible in self._doc_of_passage:
            return self._doc_of_passage[visible]
        for folded in dict.fromkeys((visible.casefold(), _as_id(visible).casefold())):
            found = self._folded.get(folded) or self._folded_passages.get(folded)
            if found is None and (passage := _PASSAGE_SUFFIX.fullmatch(folded)):
                # A passage id past the document's last sentence ("IPC_420_7").
                found = self._folded.get(passage.group(1))
            if found is not None:
                return found
        # A bare section number: the one document whose id ends with it, if only one does.
        ends = self._by_last_part.get(visible.casefold(), [])
        return ends[0] if len(ends) == 1 else None


def _as_id(text: str) -> str:
    """A locator or hand-written reference as an id: "IPC/420#0" and "IPC 420" -> "IPC_420"."""
    return _SEPARATORS.sub("_", _LOCATOR_PASSAGE.sub("", text))


# A token holds an offset, the acts (at most 100 short codes) and an index version.
_MAX_TOKEN_CHARS = 4096
# Index versions are short content hashes; a longer one in a token was not written by us.
_MAX_ECHOED_VERSION = 64


def _make_token(offset: int, acts: Sequence[str], index_version: str) -> str:
    raw = json.dumps({"o": offset, "a": list(acts), "i": index_version}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _read_token(token: str, acts: Sequence[str], index_version: str) -> int:
    """The offset a token continues from; INVALID_ARGUMENT for a token that is not one of ours,
    or was made for other acts or another index."""
    not_ours = _bad_token("is not a page token ListDocuments gave")
    if len(token) > _MAX_TOKEN_CHARS:  # ours are short; decode nothing a client made up
        raise not_ours
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        fields = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        raise not_ours from None
    if not isinstance(fields, dict) or set(fields) != {"o", "a", "i"}:
        raise not_ours
    offset, token_acts, version = fields["o"], fields["a"], fields["i"]
    if type(offset) is not int or offset < 0:  # not a bool either
        raise not_ours
    if not isinstance(version, str):  # ours is always a string
        raise not_ours
    if token_acts != list(acts):
        raise _bad_token("was made for other acts; list again without it")
    if version != index_version:
        # The version a client's token claims is echoed only when it could be one of ours
        # (short); a forged one could be kilobytes.
        made_for = f"index {version!r}" if len(version) <= _MAX_ECHOED_VERSION else "another index"
        raise _bad_token(
            f"was made for {made_for}, and {index_version!r} serves now; list again without it"
        )
    return offset


def _bad_token(why: str) -> InvalidInputError:
    return InvalidInputError([FieldViolation("page_token", why)])

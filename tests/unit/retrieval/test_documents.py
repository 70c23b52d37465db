"""Documents by id from an index's chunks, and the hint a miss carries."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.common.documents import DOCUMENT_RESOURCE_TYPE
from services.common.errors import NotFoundError
from services.common.evidence import Chunk
from services.retrieval.documents import DocumentIndex


def chunks(doc_id: str, n: int) -> list[Chunk]:
    return [Chunk(f"{doc_id}_{i}", doc_id, f"Sentence {i}.", sentence_index=i) for i in range(n)]


@pytest.fixture
def index() -> DocumentIndex:
    # Out of order on purpose: the index keeps sentence order.
    return DocumentIndex([*reversed(chunks("IPC_420", 2)), *chunks("IPC_42", 3)])


def test_a_document_is_its_chunks_in_sentence_order(index: DocumentIndex) -> None:
    assert len(index) == 2
    assert [c.semantic_id for c in index.get("IPC_420")] == ["IPC_420_0", "IPC_420_1"]
    assert len(index.get("IPC_42")) == 3


@pytest.mark.parametrize(
    ("asked", "meant"),
    [
        ("IPC_420_1", "IPC_420"),  # a passage of it
        ("IPC_42_2", "IPC_42"),
        ("IPC_420_9", "IPC_420"),  # past its last passage
        ("ipc_420", "IPC_420"),
        (" IPC_42\n", "IPC_42"),
        ("ipc_420_0", "IPC_420"),
        ("IPC_4", None),
        ("IPC_9999_0", None),
        ("420", None),
    ],
)
def test_a_miss_names_the_document_meant(
    index: DocumentIndex, asked: str, meant: str | None
) -> None:
    with pytest.raises(NotFoundError) as caught:
        index.get(asked)
    error = caught.value
    assert (error.resource_type, error.resource_name) == (DOCUMENT_RESOURCE_TYPE, asked)
    assert error.message.startswith(f"no document {asked!r} in the index")
    if meant is None:
        assert "did you mean" not in error.message
    else:
        assert error.message.endswith(f"did you mean {meant!r}?")


@given(st.text(max_size=300))
def test_any_id_is_served_or_not_found_never_another_error(asked: str) -> None:
    index = DocumentIndex([*chunks("IPC_420", 2), *chunks("Ünïcode_doc", 1)])
    try:
        found = index.get(asked)
    except NotFoundError as error:
        assert error.resource_name == asked
        assert asked not in ("IPC_420", "Ünïcode_doc")
    else:
        assert asked in ("IPC_420", "Ünïcode_doc")
        assert {c.doc_id for c in found} == {asked}

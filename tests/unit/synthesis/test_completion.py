"""The evidence made whole (completion.py): a named section's operative text, a list's items.

Rules L and L′ (docs/EVALUATION.md, "Then L"): retrieval returns what completes a section after
every ranked passage; it joins the evidence after the ``top_k``.
"""

from __future__ import annotations

from services.common.evidence import ScoredChunk
from services.synthesis.completion import complete_evidence
from tests.unit.synthesis.fakes import scored
from tests.unit.synthesis.test_extractive import ipc_passages


def ids(chunks: list[ScoredChunk]) -> list[str]:
    return [s.chunk.semantic_id for s in chunks]


# The candidate pool retrieval returns for "What is the punishment under section 376?": the
# named section's ranked passages (provisos first), other sections, then its operative text.
POOL_376 = scored(
    ipc_passages(),
    "IPC_376_4",
    "IPC_376_5",
    "IPC_376_6",
    "IPC_376E_0",
    "IPC_376A_0",
    "IPC_376_0",
    "IPC_376_1",
    "IPC_376_2",
)
# ... and for "What is grievous hurt?": s.320's ranked passages, others, the rest of its list.
POOL_320 = scored(
    ipc_passages(),
    "IPC_320_0",
    "IPC_320_3",
    "IPC_320_6",
    "IPC_322_0",
    "IPC_459_0",
    "IPC_335_0",
    "IPC_320_1",
    "IPC_320_2",
    "IPC_320_4",
    "IPC_320_5",
    "IPC_320_7",
)


class TestCompleteEvidence:
    def test_complete_evidence_adds_the_named_sections_operative_text(self) -> None:
        pool = list(POOL_376)

        evidence = complete_evidence(pool[:5], pool, ["376"], operative=True, lists=True, limit=50)

        assert ids(evidence) == [*ids(pool[:5]), "IPC_376_0", "IPC_376_1", "IPC_376_2"]
        assert (
            complete_evidence(pool[:5], pool, ["302"], operative=True, lists=True, limit=50)
            == pool[:5]
        )

    def test_complete_evidence_adds_a_lists_every_item(self) -> None:
        pool = list(POOL_320)

        evidence = complete_evidence(pool[:5], pool, [], operative=False, lists=True, limit=50)

        assert sorted(i for i in ids(evidence) if i.startswith("IPC_320_")) == [
            f"IPC_320_{n}" for n in range(8)
        ]
        assert len(evidence) == 10  # the five slots and the five items not among them

    def test_complete_evidence_adds_a_section_whole_or_not_at_all(self) -> None:
        pool = list(POOL_320)

        evidence = complete_evidence(pool[:5], pool, [], operative=False, lists=True, limit=9)

        assert evidence == list(pool[:5])

    def test_complete_evidence_off_adds_nothing(self) -> None:
        evidence = complete_evidence(
            POOL_320[:5], POOL_320, [], operative=False, lists=False, limit=50
        )
        assert evidence == list(POOL_320[:5])

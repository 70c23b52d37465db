"""Test doubles for the search pipeline: a hashing encoder and a tiny statute-like corpus."""

from __future__ import annotations

from collections.abc import Sequence

from services.common.evidence import Chunk
from services.retrieval.index import DenseIndex
from services.retrieval.store import IndexArtifacts, Manifest
from tests.support.fake_encoder import HashingEncoder

__all__ = ["HashingEncoder", "make_artifacts", "statute_chunks"]


# (act, section, title, sentences)
STATUTES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (
        "IPC",
        "378",
        "Theft",
        (
            "Whoever, intending to take dishonestly any movable property out of the possession "
            "of any person without that person's consent, moves that property in order to such "
            "taking, is said to commit theft.",
        ),
    ),
    (
        "IPC",
        "379",
        "Punishment for theft",
        (
            "Whoever commits theft shall be punished with imprisonment of either description "
            "for a term which may extend to three years, or with fine, or with both.",
        ),
    ),
    (
        "IPC",
        "420",
        "Cheating and dishonestly inducing delivery of property",
        (
            "Whoever cheats and thereby dishonestly induces the person deceived to deliver any "
            "property to any person.",
            "Such a person shall be punished with imprisonment of either description for a term "
            "which may extend to seven years, and shall also be liable to fine.",
        ),
    ),
    (
        "IPC",
        "300",
        "Murder",
        ("Except in the cases hereinafter excepted, culpable homicide is murder.",),
    ),
    (
        "IPC",
        "302",
        "Punishment for murder",
        (
            "Whoever commits murder shall be punished with death, or imprisonment for life, and "
            "shall also be liable to fine.",
        ),
    ),
    (
        "IPC",
        "375",
        "Rape",
        (
            "A man is said to commit rape in the circumstances described below.",
            "First, against her will.",
            "Secondly, without her consent.",
            "The weather in the hills is pleasant in summer.",
            "Thirdly, with her consent when it has been obtained by putting her in fear of death.",
        ),
    ),
    (
        "CRPC",
        "154",
        "Information in cognizable cases",
        (
            "Every information relating to the commission of a cognizable offence, if given "
            "orally to an officer in charge of a police station, shall be reduced to writing.",
            "A copy of the information as recorded shall be given forthwith, free of cost, to "
            "the informant.",
        ),
    ),
    (
        "CRPC",
        "420",
        "Order for custody of property",
        ("The court may make an order for the custody of property pending the trial.",),
    ),
    (
        "COI",
        "21",
        "Protection of life and personal liberty",
        (
            "No person shall be deprived of his life or personal liberty except according to "
            "procedure established by law.",
        ),
    ),
    (
        "COI",
        "21A",
        "Right to education",
        (
            "The State shall provide free and compulsory education to all children of the age "
            "of six to fourteen years in such manner as the State may, by law, determine.",
        ),
    ),
)


def statute_chunks() -> list[Chunk]:
    chunks: list[Chunk] = []
    for act, section, title, sentences in STATUTES:
        doc_id = f"{act}_{section}"
        offset = 0
        for n, text in enumerate(sentences):
            chunks.append(
                Chunk(
                    semantic_id=f"{doc_id}_{n}",
                    doc_id=doc_id,
                    text=text,
                    title=title,
                    section=section,
                    act=act,
                    act_name={"IPC": "Indian Penal Code, 1860"}.get(act, act),
                    sentence_index=n,
                    char_start=offset,
                    char_end=offset + len(text),
                    context_before=sentences[n - 1] if n else "",
                    context_after=sentences[n + 1] if n + 1 < len(sentences) else "",
                    extra={"source": "test"},
                )
            )
            offset += len(text) + 1
    return chunks


def make_artifacts(chunks: Sequence[Chunk], encoder: HashingEncoder) -> IndexArtifacts:
    """Artifacts as load_artifacts would return them, built in memory."""
    vectors = encoder.encode([f"{c.title}: {c.text}" for c in chunks])
    manifest = Manifest(
        schema_version=1,
        model=encoder.name,
        dim=encoder.dim,
        chunk_count=len(chunks),
        document_count=len({c.doc_id for c in chunks}),
        index_kind="flat",
        index_options={},
        corpus_checksum="test-corpus",
        chunking={},
        embed_text="title+text",
        sources=[],
        created_at="2026-01-01T00:00:00+00:00",
    )
    return IndexArtifacts(chunks=list(chunks), index=DenseIndex.build(vectors), manifest=manifest)

"""Index artifacts on disk: built atomically (chunks, vectors, manifest), loaded with checks."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, get_args

import numpy as np
from tqdm import tqdm

from services.common.errors import CorpusFormatError, IndexIntegrityError
from services.common.evidence import Chunk, heading
from services.common.language.acts import registry_digest
from services.retrieval.chunking import (
    DEFAULT_MIN_WORDS,
    SPLITTER_VERSION,
    LegalSentenceSplitter,
    chunk_documents,
)
from services.retrieval.corpus import READER_VERSION, Document, load_documents
from services.retrieval.embedding import Encoder, Vectors
from services.retrieval.index import DenseIndex, IndexKind

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

# Bump when the files' layout or meaning changes; older artifacts then fail to load.
SCHEMA_VERSION: Final = 1
CHUNKS_FILE: Final = "chunks.jsonl"
INDEX_FILE: Final = "index.faiss"
IDS_FILE: Final = "ids.json"
MANIFEST_FILE: Final = "manifest.json"
ARTIFACT_FILES: Final = (CHUNKS_FILE, INDEX_FILE, IDS_FILE, MANIFEST_FILE)
INGEST_COMMAND: Final = "python -m services.retrieval.ingest --out {out_dir} SOURCE..."

# What each chunk's vector is computed from. "heading+text" prefixes "Section 420. Cheating:"
# (statutes) or the title: clauses of a section rarely repeat its topic, and users name
# sections by number. The comparison that chose this default was never written to a report;
# docs/RETRIEVAL.md lists it under "not measured" until a benchmark records it.
EmbedText = Literal["text", "title+text", "heading+text"]
EMBED_TEXTS: Final = get_args(EmbedText)
DEFAULT_EMBED_TEXT: EmbedText = "heading+text"
# Texts handed to the encoder per call: large enough that its length-sorted batching stays
# efficient, small enough that the progress bar moves.
_ENCODE_BLOCK = 1024


@dataclass(frozen=True, slots=True)
class Manifest:
    """What an index directory holds and how it was built (manifest.json)."""

    schema_version: int
    model: str
    dim: int
    chunk_count: int
    document_count: int
    index_kind: str
    index_options: dict[str, int]
    corpus_checksum: str
    chunking: dict[str, Any]
    embed_text: str
    sources: list[str]
    created_at: str
    timings: dict[str, float] = field(default_factory=dict)
    # Chunks whose embedding text is longer than the model's input: their vector reads its
    # first window only (BM25 indexes all of it). None in manifests written before it was kept.
    over_window: list[str] | None = None
    # True when build_artifacts found this manifest up to date; never written to disk.
    reused: bool = field(default=False, compare=False)

    @property
    def index_version(self) -> str:
        """Short content hash for cache keys: changes when corpus, model or index changes."""
        key = json.dumps(
            [
                self.schema_version,
                self.model,
                self.dim,
                self.corpus_checksum,
                self.index_kind,
                self.index_options,
            ],
            sort_keys=True,
        )
        return hashlib.sha256(key.encode()).hexdigest()[:12]

    def to_json(self) -> str:
        data = dataclasses.asdict(self)
        del data["reused"]
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, raw: str) -> Manifest:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("manifest is not a JSON object")
        names = {f.name for f in dataclasses.fields(cls)} - {"reused"}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True, slots=True)
class IndexArtifacts:
    """A loaded, consistent index directory: ``chunks[i]`` is the vector at position ``i``."""

    chunks: list[Chunk]
    index: DenseIndex
    manifest: Manifest

    @property
    def index_version(self) -> str:
        return self.manifest.index_version


def corpus_checksum(
    sources: Sequence[Path],
    *,
    fmt: str | None,
    context: int,
    min_words: int,
    embed_text: str,
) -> str:
    """sha256 over every source file's bytes (directories: sorted relative paths and bytes)
    and every parameter that changes the chunks or their vectors' input text."""
    digest = hashlib.sha256()
    params = {
        "schema": SCHEMA_VERSION,
        "format": fmt,
        "context": context,
        "min_words": min_words,
        "splitter": SPLITTER_VERSION,
        "reader": READER_VERSION,
        "embed_text": embed_text,
        # The act registry says where a statutes file keeps each field and what each act is
        # called: editing it changes the documents (data/corpora/acts.json).
        "acts": registry_digest(),
    }
    digest.update(json.dumps(params, sort_keys=True).encode())
    for source in sources:
        for rel, file in _source_files(source):
            digest.update(f"\0{rel}\0{file.stat().st_size}\0".encode())
            with file.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def _source_files(source: Path) -> Iterator[tuple[str, Path]]:
    if not source.exists():
        raise CorpusFormatError(f"{source}: no such file or directory")
    if source.is_dir():
        for file in sorted(p for p in source.rglob("*") if p.is_file()):
            yield f"{source.name}/{file.relative_to(source).as_posix()}", file
    else:
        yield source.name, source


def embedding_texts(chunks: Sequence[Chunk], embed_text: str) -> list[str]:
    """The strings the encoder sees for ``chunks`` (see ``EmbedText``)."""
    if embed_text == "text":
        return [c.text for c in chunks]
    if embed_text == "title+text":
        return [f"{c.title}: {c.text}" if c.title else c.text for c in chunks]
    if embed_text == "heading+text":
        return [f"{heading(c)}: {c.text}" if heading(c) else c.text for c in chunks]
    raise ValueError(f"unknown embed_text {embed_text!r}; expected one of {EMBED_TEXTS}")


def load_corpus(
    sources: Sequence[Path], *, fmt: str | None = None, context: int = 1, min_words: int = 2
) -> tuple[list[Document], list[Chunk]]:
    """Documents and chunks of all ``sources``; duplicate ids across them are a format error."""
    documents: list[Document] = []
    seen_docs: dict[str, Path] = {}
    for source in sources:
        for doc in load_documents(source, fmt):
            if doc.doc_id in seen_docs:
                where = (
                    f"twice in {source}"
                    if seen_docs[doc.doc_id] == source
                    else f"in both {seen_docs[doc.doc_id]} and {source}"
                )
                raise CorpusFormatError(
                    f"document id {doc.doc_id} occurs {where}; chunk ids must be unique",
                    metadata={"doc_id": doc.doc_id},
                )
            seen_docs[doc.doc_id] = source
            documents.append(doc)
    splitter = LegalSentenceSplitter(min_words=min_words)
    chunks = chunk_documents(documents, context=context, splitter=splitter)
    # Unique doc ids make "<doc_id>_<n>" unique too; checked anyway because the id map relies on it.
    seen_chunks: set[str] = set()
    for chunk in chunks:
        if chunk.semantic_id in seen_chunks:
            raise CorpusFormatError(
                f"semantic id {chunk.semantic_id} occurs twice",
                metadata={"semantic_id": chunk.semantic_id},
            )
        seen_chunks.add(chunk.semantic_id)
    return documents, chunks


def build_artifacts(
    sources: Sequence[Path],
    out_dir: Path,
    encoder: Encoder,
    *,
    context: int = 1,
    index_kind: IndexKind = "flat",
    index_options: Mapping[str, int] | None = None,
    fmt: str | None = None,
    min_words: int = DEFAULT_MIN_WORDS,
    embed_text: EmbedText = DEFAULT_EMBED_TEXT,
    batch_size: int = 128,
    force_rebuild: bool = False,
    progress: bool = True,
) -> Manifest:
    """Chunk, embed and index ``sources`` into ``out_dir``, or reuse what is there.

    An existing directory is reused when its manifest has the same corpus checksum, model,
    dimension and index settings (unless ``force_rebuild``). Otherwise everything is written
    to a temporary sibling directory that then replaces ``out_dir``, so a crash never leaves a
    half-written index behind. ``out_dir`` belongs to this function: other files in it go.
    """
    if not sources:
        raise CorpusFormatError("no corpus sources given")
    if embed_text not in EMBED_TEXTS:
        raise ValueError(f"unknown embed_text {embed_text!r}; expected one of {EMBED_TEXTS}")
    options = dict(index_options or {})
    checksum = corpus_checksum(
        sources, fmt=fmt, context=context, min_words=min_words, embed_text=embed_text
    )
    if not force_rebuild:
        existing = _reusable_manifest(out_dir, checksum, encoder, index_kind, options)
        if existing is not None:
            logger.info("reusing index in %s (corpus and model unchanged)", out_dir)
            return dataclasses.replace(existing, reused=True)

    started = time.perf_counter()
    documents, chunks = load_corpus(sources, fmt=fmt, context=context, min_words=min_words)
    if not chunks:
        raise CorpusFormatError(f"no text found in {', '.join(map(str, sources))}")
    chunked = time.perf_counter()
    texts = embedding_texts(chunks, embed_text)
    over_window = [
        c.semantic_id for c, t in zip(chunks, texts, strict=True) if len(encoder.windows(t)) > 1
    ]
    if over_window:
        logger.warning(
            "%d chunks are longer than the embedding model's input: their vectors read the "
            "first window only (BM25 indexes all of each); first: %s",
            len(over_window),
            ", ".join(over_window[:5]),
        )
    vectors = _encode(encoder, texts, batch_size, progress)
    encoded = time.perf_counter()
    index = DenseIndex.build(vectors, index_kind, **options)
    indexed = time.perf_counter()
    logger.info(
        "embedded %d chunks in %.1fs (%.0f chunks/s)",
        len(chunks),
        encoded - chunked,
        len(chunks) / max(encoded - chunked, 1e-9),
    )
    manifest = Manifest(
        schema_version=SCHEMA_VERSION,
        model=encoder.name,
        dim=encoder.dim,
        chunk_count=len(chunks),
        document_count=len(documents),
        index_kind=index_kind,
        index_options=options,
        corpus_checksum=checksum,
        chunking={"context": context, "min_words": min_words, "splitter": SPLITTER_VERSION},
        embed_text=embed_text,
        sources=[str(s) for s in sources],
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        over_window=over_window,
        timings={
            "load_chunk_s": round(chunked - started, 3),
            "encode_s": round(encoded - chunked, 3),
            "index_s": round(indexed - encoded, 3),
        },
    )
    _write_atomically(out_dir, chunks, index, manifest)
    return manifest


def _encode(encoder: Encoder, texts: list[str], batch_size: int, progress: bool) -> Vectors:
    parts: list[Vectors] = []
    with tqdm(total=len(texts), unit="chunk", desc="embedding", disable=not progress) as bar:
        for start in range(0, len(texts), _ENCODE_BLOCK):
            block = texts[start : start + _ENCODE_BLOCK]
            parts.append(encoder.encode(block, batch_size=batch_size))
            bar.update(len(block))
    vectors = np.concatenate(parts) if parts else np.zeros((0, encoder.dim), dtype=np.float32)
    if vectors.shape != (len(texts), encoder.dim):
        raise IndexIntegrityError(
            f"encoder {encoder.name} returned vectors of shape {vectors.shape}, "
            f"expected ({len(texts)}, {encoder.dim})"
        )
    return vectors


def _reusable_manifest(
    out_dir: Path, checksum: str, encoder: Encoder, kind: str, options: dict[str, int]
) -> Manifest | None:
    if not all((out_dir / name).is_file() for name in ARTIFACT_FILES):
        return None
    try:
        manifest = Manifest.from_json((out_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        logger.warning("%s: unreadable manifest; rebuilding", out_dir)
        return None
    same = (
        manifest.schema_version == SCHEMA_VERSION
        and manifest.corpus_checksum == checksum
        and manifest.model == encoder.name
        and manifest.dim == encoder.dim
        and manifest.index_kind == kind
        and manifest.index_options == options
    )
    return manifest if same else None


def _write_atomically(
    out_dir: Path, chunks: Sequence[Chunk], index: DenseIndex, manifest: Manifest
) -> None:
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    tmp.chmod(0o755)  # mkdtemp makes it owner-only; the service may run as another user
    old = out_dir.parent / f".{out_dir.name}.old-{tmp.name.rsplit('-', 1)[-1]}"
    try:
        with (tmp / CHUNKS_FILE).open("w", encoding="utf-8") as fh:
            for chunk in chunks:
                fh.write(json.dumps(dataclasses.asdict(chunk), ensure_ascii=False) + "\n")
        (tmp / IDS_FILE).write_text(
            json.dumps([c.semantic_id for c in chunks], ensure_ascii=False), encoding="utf-8"
        )
        index.save(tmp / INDEX_FILE)
        (tmp / MANIFEST_FILE).write_text(manifest.to_json(), encoding="utf-8")
        for name in ARTIFACT_FILES:
            with (tmp / name).open("rb") as fh:
                os.fsync(fh.fileno())
        # Two renames: readers see the old directory, then (briefly) none, then the new one;
        # never a mixture of old and new files.
        if out_dir.exists():
            out_dir.rename(old)
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    logger.info("wrote %d chunks to %s", len(chunks), out_dir)


def load_artifacts(out_dir: Path, *, expected_model: str, expected_dim: int) -> IndexArtifacts:
    """Load an index directory and check it is complete, consistent and built for this model."""
    missing = [name for name in ARTIFACT_FILES if not (out_dir / name).is_file()]
    if missing:
        raise IndexIntegrityError(
            f"index directory {out_dir} lacks {', '.join(missing)}; build it with "
            f"`{INGEST_COMMAND.format(out_dir=out_dir)}`",
            metadata={"index_dir": str(out_dir), "missing": ",".join(missing)},
        )
    manifest = _read(out_dir, MANIFEST_FILE, Manifest.from_json)
    _check(
        manifest.schema_version == SCHEMA_VERSION,
        f"{out_dir} was built with artifact schema {manifest.schema_version}, this code "
        f"reads schema {SCHEMA_VERSION}; rebuild it with --force-rebuild",
    )
    _check(
        manifest.model == expected_model,
        f"{out_dir} was built with model {manifest.model!r} but the service uses "
        f"{expected_model!r}; rebuild the index with that model",
    )
    _check(
        manifest.dim == expected_dim,
        f"{out_dir} manifest says dimension {manifest.dim} but the model produces {expected_dim}",
    )
    ids = _read(out_dir, IDS_FILE, _parse_ids)
    chunks = _read(out_dir, CHUNKS_FILE, _parse_chunks)
    index = _read_index(out_dir / INDEX_FILE)
    _check(
        index.dim == manifest.dim,
        f"{out_dir}: index dimension {index.dim} != manifest dimension {manifest.dim}",
    )
    _check(
        index.kind == manifest.index_kind,
        f"{out_dir}: index is {index.kind} but the manifest says {manifest.index_kind}",
    )
    counts = {
        "index vectors": index.ntotal,
        IDS_FILE: len(ids),
        CHUNKS_FILE: len(chunks),
        "manifest chunk_count": manifest.chunk_count,
    }
    _check(
        len(set(counts.values())) == 1,
        f"{out_dir}: counts disagree: " + ", ".join(f"{k}={v}" for k, v in counts.items()),
    )
    for position, (sid, chunk) in enumerate(zip(ids, chunks, strict=True)):
        _check(
            sid == chunk.semantic_id,
            f"{out_dir}: {IDS_FILE}[{position}] is {sid!r} but {CHUNKS_FILE} line "
            f"{position + 1} is {chunk.semantic_id!r}",
        )
    _check(len(set(ids)) == len(ids), f"{out_dir}: {IDS_FILE} holds duplicate ids")
    return IndexArtifacts(chunks=chunks, index=index, manifest=manifest)


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise IndexIntegrityError(message)


def _read(out_dir: Path, name: str, parse: Callable[[str], _T]) -> _T:
    try:
        return parse((out_dir / name).read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise IndexIntegrityError(
            f"{out_dir / name} is unreadable ({exc}); rebuild with --force-rebuild"
        ) from exc


def _parse_ids(raw: str) -> list[str]:
    ids = json.loads(raw)
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ValueError("expected a JSON list of strings")
    return ids


def _parse_chunks(raw: str) -> list[Chunk]:
    return [Chunk(**json.loads(line)) for line in raw.splitlines() if line.strip()]


def _read_index(path: Path) -> DenseIndex:
    try:
        return DenseIndex.load(path)
    except (RuntimeError, ValueError) as exc:
        raise IndexIntegrityError(
            f"{path} is not a readable FAISS index ({exc}); rebuild with --force-rebuild"
        ) from exc

"""Builds (or reuses) each dataset's corpus file and retrieval index under var/eval/<dataset>/."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluation.datasets import CACHE_ROOT, EvalDataset
from services.retrieval.chunking import DEFAULT_MIN_WORDS
from services.retrieval.embedding import DEFAULT_MODEL_NAME, Encoder, load_encoder
from services.retrieval.store import (
    ARTIFACT_FILES,
    DEFAULT_EMBED_TEXT,
    MANIFEST_FILE,
    SCHEMA_VERSION,
    build_artifacts,
    corpus_checksum,
)

logger = logging.getLogger(__name__)

# The ingest CLI's defaults, so an index built here equals one built by
# `python -m services.retrieval.ingest` with `dataset.ingest_args(...)`.
CONTEXT = 1
INDEX_KIND = "flat"


@dataclass(frozen=True, slots=True)
class PreparedIndex:
    """Where a dataset's corpus file and index live, and whether the index was reused."""

    corpus_file: Path
    index_dir: Path
    reused: bool
    chunk_count: int
    model: str


def _corpus_file(dataset: EvalDataset, cache: Path) -> Path:
    """The file to ingest: the statutes file itself, or the JSONL corpus written once to the cache."""
    if dataset.statutes_file is not None:
        return dataset.statutes_file
    path = cache / "corpus" / "corpus.jsonl"
    # The cache directory is named by the corpus checksum, so equal size means equal bytes unless
    # the file was edited by hand; compare bytes anyway (the corpora are a few MB).
    if not path.is_file() or path.read_bytes() != dataset.corpus_bytes():
        dataset.write_corpus(path.parent)
    return path


def _current_manifest(index_dir: Path, checksum: str, model: str) -> dict[str, object] | None:
    """The manifest of ``index_dir`` when it was built from this corpus with this model."""
    if not all((index_dir / name).is_file() for name in ARTIFACT_FILES):
        return None
    try:
        manifest = json.loads((index_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    same = (
        isinstance(manifest, dict)
        and manifest.get("schema_version") == SCHEMA_VERSION
        and manifest.get("corpus_checksum") == checksum
        and manifest.get("model") == model
        and manifest.get("index_kind") == INDEX_KIND
        and manifest.get("index_options") == {}
    )
    return manifest if same else None


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def prepare_index(
    dataset: EvalDataset,
    *,
    root: Path = CACHE_ROOT,
    encoder_factory: Callable[[], Encoder] = load_encoder,
    model_name: str = DEFAULT_MODEL_NAME,
    progress: bool = True,
) -> PreparedIndex:
    """Build ``dataset``'s index in ``<root>/<dataset>/<checksum[:16]>/index`` unless it is current.

    The encoder is loaded only when a build is needed: checking a cached index costs a hash of
    the corpus. The store's own manifest check (corpus bytes, chunking, splitter version, model)
    decides reuse, so a changed splitter or model rebuilds rather than serving stale chunks.
    """
    cache = dataset.cache_dir(root)
    source = _corpus_file(dataset, cache)
    # One index per model: switching --set RETRIEVAL_MODEL_PATH back and forth reuses both.
    index_dir = cache / (
        "index" if model_name == DEFAULT_MODEL_NAME else f"index-{_slug(model_name)}"
    )
    checksum = corpus_checksum(
        [source],
        fmt=dataset.corpus_format,
        context=CONTEXT,
        min_words=DEFAULT_MIN_WORDS,
        embed_text=DEFAULT_EMBED_TEXT,
    )
    manifest = _current_manifest(index_dir, checksum, model_name)
    if manifest is not None:
        logger.info("%s: reusing index %s", dataset.name, index_dir)
        return PreparedIndex(source, index_dir, True, int(str(manifest["chunk_count"])), model_name)
    logger.info(
        "%s: building index in %s (this takes minutes for large corpora)", dataset.name, index_dir
    )
    encoder = encoder_factory()
    built = build_artifacts(
        [source],
        index_dir,
        encoder,
        context=CONTEXT,
        fmt=dataset.corpus_format,
        min_words=DEFAULT_MIN_WORDS,
        embed_text=DEFAULT_EMBED_TEXT,
        progress=progress,
    )
    return PreparedIndex(source, index_dir, built.reused, built.chunk_count, built.model)

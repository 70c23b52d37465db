"""Ingest CLI: chunk, embed and index corpora into the retrieval service's artifact directory."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final, get_args

from services.common.cli_errors import run_cli
from services.common.errors import CorpusFormatError, IndexIntegrityError
from services.common.logs import configure_logging
from services.retrieval.corpus import FORMATS, load_documents
from services.retrieval.index import IndexKind
from services.retrieval.store import DEFAULT_EMBED_TEXT, EMBED_TEXTS, build_artifacts

ROOT: Final = Path(__file__).resolve().parents[2]
STATUTES_DIR: Final = ROOT / "data" / "corpora" / "indian_law"
DEFAULT_SOURCE: Final = STATUTES_DIR / "ipc.json"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m services.retrieval.ingest",
        description="Chunk documents into sentences, embed them and write a dense index.",
    )
    parser.add_argument(
        "sources",
        nargs="*",
        type=Path,
        metavar="SOURCE",
        help=f"corpus files or directories (default: {DEFAULT_SOURCE.relative_to(ROOT)})",
    )
    parser.add_argument("--out", type=Path, required=True, help="artifact directory to write")
    parser.add_argument(
        "--all-statutes",
        action="store_true",
        help=f"ingest every act in {STATUTES_DIR.relative_to(ROOT)}/*.json",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default=None, help="source format (default: from the name)"
    )
    parser.add_argument(
        "--context", type=int, default=1, help="sentences of context each side (default: 1)"
    )
    parser.add_argument(
        "--index-type", choices=get_args(IndexKind), default="flat", help="default: flat"
    )
    approx = parser.add_argument_group("approximate index parameters (FAISS defaults in index.py)")
    approx.add_argument("--hnsw-m", type=int, help="HNSW neighbours per node (default: 32)")
    approx.add_argument(
        "--ef-construction", type=int, help="HNSW build-time search width (default: 40)"
    )
    approx.add_argument("--ef-search", type=int, help="HNSW query-time search width (default: 64)")
    approx.add_argument("--ivf-nlist", type=int, help="IVF list count (default: about 4*sqrt(n))")
    approx.add_argument("--ivf-nprobe", type=int, help="IVF lists searched per query (default: 16)")
    parser.add_argument(
        "--embed-text",
        choices=EMBED_TEXTS,
        default=DEFAULT_EMBED_TEXT,
        help=f"what each vector encodes (default: {DEFAULT_EMBED_TEXT})",
    )
    parser.add_argument(
        "--model-path", default=None, help="local sentence-transformers model (default: MiniLM)"
    )
    parser.add_argument("--device", default="cpu", help="torch device for encoding")
    parser.add_argument(
        "--batch-size", type=int, default=128, help="encoder batch size (default: 128)"
    )
    parser.add_argument(
        "--force-rebuild", action="store_true", help="rebuild even if the index is up to date"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar, warnings only")
    args = parser.parse_args(argv)
    if args.context < 0:
        parser.error("--context must be >= 0")
    if args.batch_size < 1:
        parser.error("--batch-size must be >= 1")
    hnsw = ("hnsw_m", "ef_construction", "ef_search")
    ivf = ("ivf_nlist", "ivf_nprobe")
    args.index_options = {}
    for name in (*hnsw, *ivf):
        value = getattr(args, name)
        if value is None:
            continue
        if value < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
        if name not in {"flat": (), "hnsw": hnsw, "ivf": ivf}[args.index_type]:
            parser.error(
                f"--{name.replace('_', '-')} does not apply to --index-type {args.index_type}"
            )
        args.index_options[name] = value
    if args.all_statutes:
        args.sources = [*args.sources, *sorted(STATUTES_DIR.glob("*.json"))]
    if not args.sources:
        args.sources = [DEFAULT_SOURCE]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging("ingest", "WARNING" if args.quiet else "INFO")
    # The packaged model is on disk; never let a missing file turn into a hub download.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from services.retrieval.embedding import load_encoder

    # Read every source before the model (seconds to load): a bad file is named at once. Its
    # warnings come once, from the build below.
    logging.disable(logging.WARNING)
    try:
        for source in args.sources:
            load_documents(source, args.format)
    except CorpusFormatError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    finally:
        logging.disable(logging.NOTSET)
    started = time.perf_counter()
    try:
        encoder = load_encoder(args.model_path, device=args.device, progress=not args.quiet)
    except (OSError, ValueError) as exc:
        print(f"error: cannot load the embedding model: {exc}", file=sys.stderr)
        return 1
    loaded = time.perf_counter()
    try:
        manifest = build_artifacts(
            args.sources,
            args.out,
            encoder,
            context=args.context,
            index_kind=args.index_type,
            index_options=args.index_options,
            fmt=args.format,
            embed_text=args.embed_text,
            batch_size=args.batch_size,
            force_rebuild=args.force_rebuild,
            progress=not args.quiet,
        )
    except (CorpusFormatError, IndexIntegrityError) as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    finished = time.perf_counter()
    seconds = finished - loaded
    action = "reused" if manifest.reused else "built"
    # A rate only for a build: a reuse embeds nothing, and chunks over its checking time meant
    # nothing ("267730 chunks/s").
    rate = "" if manifest.reused else f"{manifest.chunk_count / max(seconds, 1e-9):.0f} chunks/s; "
    print(
        f"{action} {args.out}: {manifest.document_count} documents, "
        f"{manifest.chunk_count} chunks, {manifest.index_kind} index, {seconds:.1f}s "
        f"({rate}model load {loaded - started:.1f}s)"
    )
    if manifest.over_window:
        print(
            f"  {len(manifest.over_window)} chunks longer than the embedding model's input "
            f"(their vectors read the first window; BM25 all): "
            f"{', '.join(manifest.over_window[:5])}{' ...' if len(manifest.over_window) > 5 else ''}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))

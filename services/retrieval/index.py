"""Dense vector index over FAISS: inner product on normalised vectors (cosine), flat/HNSW/IVF."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal, cast, get_args

import faiss
import numpy as np
import numpy.typing as npt

IndexKind = Literal["flat", "hnsw", "ivf"]
INDEX_KINDS: tuple[str, ...] = get_args(IndexKind)

Scores = npt.NDArray[np.float32]
Positions = npt.NDArray[np.int64]

# FAISS trains IVF well with at least this many vectors per list (it warns below 39).
_MIN_POINTS_PER_LIST = 39


def configure_faiss(*, threads: int | None = None, blas_threshold: int | None = None) -> None:
    """Tune FAISS for a small machine (process-wide; measured numbers in ENVIRONMENT.md).

    ``threads=1`` makes single queries 2-3x faster on a 2-core box, where starting OpenMP
    threads costs more than they save. ``blas_threshold=20`` sends batches of 20+ queries to
    BLAS (this FAISS build's default is far higher), 3-5x faster for batches of ~64.
    """
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        faiss.omp_set_num_threads(threads)
    if blas_threshold is not None:
        faiss.cvar.distance_compute_blas_threshold = blas_threshold


def set_faiss_threads(threads: int) -> None:
    """Set FAISS's OpenMP thread count (1 is fastest for single queries on 2 cores)."""
    configure_faiss(threads=threads)


def default_nlist(n: int) -> int:
    """IVF list count: about 4·√n, but never so many that a list trains on fewer than 39 points."""
    return max(1, min(int(4 * math.sqrt(n)), n // _MIN_POINTS_PER_LIST))


class DenseIndex:
    """A FAISS index plus its kind; positions are row numbers of the vectors it was built from."""

    def __init__(self, index: Any, kind: IndexKind) -> None:
        self._index = index
        self.kind: IndexKind = kind

    @property
    def ntotal(self) -> int:
        return int(self._index.ntotal)

    @property
    def dim(self) -> int:
        return int(self._index.d)

    @classmethod
    def build(
        cls,
        vectors: npt.ArrayLike,
        kind: IndexKind = "flat",
        *,
        hnsw_m: int = 32,
        ef_construction: int = 40,
        ef_search: int = 64,
        ivf_nlist: int | None = None,
        ivf_nprobe: int = 16,
    ) -> DenseIndex:
        """Index ``vectors`` (n, dim), which should already be L2-normalised."""
        data = _as_matrix(vectors, "vectors")
        n, dim = data.shape
        if dim == 0:
            raise ValueError("vectors must have at least one dimension")
        index: Any
        if kind == "flat":
            index = faiss.IndexFlatIP(dim)
        elif kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = ef_construction
            index.hnsw.efSearch = ef_search
        elif kind == "ivf":
            if n == 0:
                raise ValueError("an IVF index needs at least one vector to train on")
            nlist = ivf_nlist or default_nlist(n)
            if nlist > n:
                raise ValueError(f"ivf_nlist={nlist} exceeds the number of vectors ({n})")
            quantizer = faiss.IndexFlatIP(dim)
            index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
            index.train(data)
            index.nprobe = min(ivf_nprobe, nlist)
        else:
            raise ValueError(f"unknown index kind {kind!r}; expected one of {INDEX_KINDS}")
        if n:
            index.add(data)
        return cls(index, kind)

    def search(self, queries: npt.ArrayLike, k: int) -> tuple[Scores, Positions]:
        """Top-``k`` (scores, positions), each (nq, k); a missing hit is position -1, score -inf."""
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        q = _as_matrix(queries, "queries")
        if q.shape[1] != self.dim:
            raise ValueError(f"queries have dimension {q.shape[1]}, the index has {self.dim}")
        nq = q.shape[0]
        if k == 0 or nq == 0:
            return np.zeros((nq, k), dtype=np.float32), np.full((nq, k), -1, dtype=np.int64)
        scores, positions = self._index.search(q, k)
        scores = np.asarray(scores, dtype=np.float32)
        positions = np.asarray(positions, dtype=np.int64)
        scores[positions < 0] = -np.inf
        return scores, positions

    def reconstruct_all(self) -> npt.NDArray[np.float32]:
        """All stored vectors (flat and HNSW only), for re-indexing or recall checks."""
        if self.kind == "ivf":
            raise NotImplementedError("IVF lists are not kept in insertion order")
        if self.ntotal == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._index.reconstruct_n(0, self.ntotal), dtype=np.float32)

    def save(self, path: Path) -> None:
        """Write the index to ``path`` (FAISS's own format; HNSW efSearch and IVF nprobe kept)."""
        faiss.write_index(self._index, str(path))

    @classmethod
    def load(cls, path: Path) -> DenseIndex:
        """Read an index written by ``save``; the kind is read back from the FAISS type."""
        index = faiss.read_index(str(path))
        return cls(index, _kind_of(index))

    def __repr__(self) -> str:
        return f"DenseIndex(kind={self.kind!r}, ntotal={self.ntotal}, dim={self.dim})"


def _kind_of(index: Any) -> IndexKind:
    if isinstance(index, faiss.IndexFlat):
        kind = "flat"
    elif isinstance(index, faiss.IndexHNSW):
        kind = "hnsw"
    elif isinstance(index, faiss.IndexIVF):
        kind = "ivf"
    else:
        raise ValueError(f"unsupported FAISS index type {type(index).__name__}")
    if index.metric_type != faiss.METRIC_INNER_PRODUCT:
        raise ValueError("index does not use inner product; it was not built by DenseIndex")
    return cast(IndexKind, kind)


def _as_matrix(values: npt.ArrayLike, what: str) -> npt.NDArray[np.float32]:
    array = np.asarray(values, dtype=np.float32)
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2:
        raise ValueError(f"{what} must be a 2-D array (n, dim), got shape {array.shape}")
    return np.ascontiguousarray(array)


def recall_at_k(
    approx: DenseIndex, exact: DenseIndex, queries: npt.ArrayLike, k: int = 10
) -> float:
    """Mean share of the exact top-``k`` that the approximate index also puts in its top-``k``."""
    _, truth = exact.search(queries, k)
    _, found = approx.search(queries, k)
    shares: list[float] = []
    for t_row, f_row in zip(truth, found, strict=True):
        expected = {int(p) for p in t_row if p >= 0}
        if expected:
            shares.append(len(expected & {int(p) for p in f_row if p >= 0}) / len(expected))
    return float(np.mean(shares)) if shares else 1.0

"""Dense index: build, search, save/load for flat, HNSW and IVF; the recall helper."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from services.retrieval.index import (
    DenseIndex,
    IndexKind,
    configure_faiss,
    default_nlist,
    recall_at_k,
)

KINDS: tuple[IndexKind, ...] = ("flat", "hnsw", "ivf")
pytestmark = pytest.mark.usefixtures("single_faiss_thread")


def unit_vectors(n: int, dim: int = 32, seed: int = 0) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, dim)).astype(np.float32)
    unit: npt.NDArray[np.float32] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return unit


@pytest.fixture(scope="module")
def vectors() -> npt.NDArray[np.float32]:
    return unit_vectors(400)


class TestDenseIndex:
    @pytest.mark.parametrize("kind", KINDS)
    def test_build_search_finds_each_vector_itself(
        self, vectors: npt.NDArray[np.float32], kind: IndexKind
    ) -> None:
        index = DenseIndex.build(vectors, kind, ivf_nprobe=64)
        assert (index.ntotal, index.dim, index.kind) == (400, 32, kind)
        scores, positions = index.search(vectors[:20], 3)
        assert scores.shape == positions.shape == (20, 3)
        assert positions.dtype == np.int64 and scores.dtype == np.float32
        assert list(positions[:, 0]) == list(range(20))
        np.testing.assert_allclose(scores[:, 0], 1.0, atol=1e-5)
        assert np.all(np.diff(scores, axis=1) <= 1e-6)

    def test_search_scores_are_cosine(self, vectors: npt.NDArray[np.float32]) -> None:
        index = DenseIndex.build(vectors)
        scores, positions = index.search(vectors[5], 4)
        np.testing.assert_allclose(scores[0], vectors[positions[0]] @ vectors[5], atol=1e-5)

    def test_search_pads_missing_hits(self) -> None:
        index = DenseIndex.build(unit_vectors(3))
        scores, positions = index.search(unit_vectors(2, seed=1), 5)
        assert positions.shape == (2, 5)
        assert np.all(positions[:, 3:] == -1)
        assert np.all(np.isneginf(scores[:, 3:]))
        assert np.all(positions[:, :3] >= 0)

    def test_search_k_zero_and_empty_index(self) -> None:
        empty = DenseIndex.build(np.zeros((0, 8), dtype=np.float32))
        assert empty.ntotal == 0
        _, positions = empty.search(unit_vectors(1, dim=8), 2)
        assert positions.tolist() == [[-1, -1]]
        scores, positions = DenseIndex.build(unit_vectors(4, dim=8)).search(
            unit_vectors(2, dim=8), 0
        )
        assert scores.shape == positions.shape == (2, 0)

    def test_search_rejects_bad_input(self, vectors: npt.NDArray[np.float32]) -> None:
        index = DenseIndex.build(vectors)
        with pytest.raises(ValueError, match="dimension 16"):
            index.search(unit_vectors(1, dim=16), 1)
        with pytest.raises(ValueError, match="k must be"):
            index.search(vectors[:1], -1)
        with pytest.raises(ValueError, match="2-D"):
            index.search(np.zeros((1, 1, 32)), 1)

    def test_build_rejects_unknown_kind_and_bad_ivf(self) -> None:
        with pytest.raises(ValueError, match="unknown index kind"):
            DenseIndex.build(unit_vectors(4), "lsh")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="at least one vector"):
            DenseIndex.build(np.zeros((0, 8), dtype=np.float32), "ivf")
        with pytest.raises(ValueError, match="exceeds"):
            DenseIndex.build(unit_vectors(4), "ivf", ivf_nlist=10)

    @pytest.mark.parametrize("kind", KINDS)
    def test_save_load_round_trip(
        self, tmp_path: Path, vectors: npt.NDArray[np.float32], kind: IndexKind
    ) -> None:
        index = DenseIndex.build(vectors, kind, ef_search=48, ivf_nlist=8, ivf_nprobe=3)
        index.save(tmp_path / "index.faiss")
        loaded = DenseIndex.load(tmp_path / "index.faiss")
        assert (loaded.kind, loaded.ntotal, loaded.dim) == (kind, 400, 32)
        queries = unit_vectors(10, seed=3)
        for a, b in zip(index.search(queries, 5), loaded.search(queries, 5), strict=True):
            np.testing.assert_array_equal(a, b)

    def test_load_rejects_non_inner_product_index(self, tmp_path: Path) -> None:
        import faiss

        faiss.write_index(faiss.IndexFlatL2(4), str(tmp_path / "l2.faiss"))
        with pytest.raises(ValueError, match="inner product"):
            DenseIndex.load(tmp_path / "l2.faiss")

    def test_reconstruct_all_returns_vectors(self, vectors: npt.NDArray[np.float32]) -> None:
        np.testing.assert_allclose(DenseIndex.build(vectors).reconstruct_all(), vectors)
        with pytest.raises(NotImplementedError):
            DenseIndex.build(vectors, "ivf").reconstruct_all()


class TestHelpers:
    @pytest.mark.parametrize(("n", "expected"), [(0, 1), (10, 1), (400, 10), (100_000, 1264)])
    def test_default_nlist_keeps_lists_trainable(self, n: int, expected: int) -> None:
        assert default_nlist(n) == expected

    def test_recall_at_k_exact_against_itself_is_one(
        self, vectors: npt.NDArray[np.float32]
    ) -> None:
        flat = DenseIndex.build(vectors)
        assert recall_at_k(flat, flat, unit_vectors(10, seed=4), k=10) == 1.0

    def test_recall_at_k_drops_for_a_poor_approximation(
        self, vectors: npt.NDArray[np.float32]
    ) -> None:
        flat = DenseIndex.build(vectors)
        coarse = DenseIndex.build(vectors, "ivf", ivf_nlist=10, ivf_nprobe=1)
        recall = recall_at_k(coarse, flat, unit_vectors(50, seed=5), k=10)
        assert 0.0 < recall < 1.0

    def test_configure_faiss_validates_threads(self) -> None:
        import faiss

        before = faiss.omp_get_max_threads()
        try:
            configure_faiss(threads=1)
            assert faiss.omp_get_max_threads() == 1
        finally:
            faiss.omp_set_num_threads(before)
        with pytest.raises(ValueError, match="threads"):
            configure_faiss(threads=0)

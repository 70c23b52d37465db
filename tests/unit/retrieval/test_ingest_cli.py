"""Tests for the ingest CLI's approximate-index options."""

from __future__ import annotations

import pytest

from services.retrieval.ingest import parse_args


class TestIndexOptions:
    def test_ingest_hnsw_options_reach_the_build(self) -> None:
        args = parse_args(
            ["--out", "x", "--index-type", "hnsw", "--hnsw-m", "16", "--ef-search", "128"]
        )
        assert args.index_options == {"hnsw_m": 16, "ef_search": 128}

    def test_ingest_ivf_options_reach_the_build(self) -> None:
        args = parse_args(
            ["--out", "x", "--index-type", "ivf", "--ivf-nlist", "64", "--ivf-nprobe", "8"]
        )
        assert args.index_options == {"ivf_nlist": 64, "ivf_nprobe": 8}

    def test_ingest_no_options_leaves_the_defaults(self) -> None:
        assert parse_args(["--out", "x", "--index-type", "hnsw"]).index_options == {}

    @pytest.mark.parametrize(
        "argv",
        [
            ["--index-type", "flat", "--hnsw-m", "16"],
            ["--index-type", "hnsw", "--ivf-nprobe", "4"],
            ["--index-type", "ivf", "--ivf-nprobe", "0"],
        ],
    )
    def test_ingest_rejects_misplaced_or_invalid_options(self, argv: list[str]) -> None:
        with pytest.raises(SystemExit):
            parse_args(["--out", "x", *argv])

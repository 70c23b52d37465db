"""Tests for the ingest CLI: approximate-index options, and sources read before the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.retrieval.ingest import main, parse_args


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


class TestSourcesFirst:
    def test_a_bad_source_is_named_before_the_model_loads(
        self,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        # The model takes seconds to load; a data engineer's typo should not wait for it.
        def no_model(*_args: object, **_kwargs: object) -> None:
            raise AssertionError("the model was loaded before the sources were read")

        monkeypatch.setattr("services.retrieval.embedding.load_encoder", no_model)
        bad = tmp_path / "acts.jsonl"
        bad.write_text('{"doc_id": "MTA_1", "text": "x"}\n{"doc_id": "", "text": "y"}\n')
        assert main(["--out", str(tmp_path / "index"), "--quiet", str(bad)]) == 1
        assert "acts.jsonl:2: doc_id must be a non-empty string" in (capsys.readouterr().err)

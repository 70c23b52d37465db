"""Artifact store and ingest CLI: round trip, reuse, rebuild, atomic writes, integrity errors."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from services.common.errors import CorpusFormatError, IndexIntegrityError
from services.common.evidence import Chunk
from services.retrieval import embedding, ingest, store
from services.retrieval.index import DenseIndex, IndexKind
from services.retrieval.store import (
    IndexArtifacts,
    Manifest,
    build_artifacts,
    embedding_texts,
    load_artifacts,
)
from tests.support.fake_encoder import HashingEncoder
from tests.unit.retrieval.conftest import IPC, small_encoder

pytestmark = pytest.mark.usefixtures("single_faiss_thread")

RECORDS: list[dict[str, object]] = [
    {"doc_id": "alpha", "title": "Alpha", "text": "Alpha is first. It has two sentences."},
    {"doc_id": "beta", "title": "Beta", "text": "Beta stands alone.", "metadata": {"k": "v"}},
    {"doc_id": "gamma", "text": "Gamma one.\nGamma two.\nGamma three."},
]


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", RECORDS)


@pytest.fixture
def built(corpus: Path, tmp_path: Path, fake_encoder: HashingEncoder) -> Path:
    out = tmp_path / "index"
    build_artifacts([corpus], out, fake_encoder, progress=False)
    return out


def load(out: Path, encoder: HashingEncoder) -> IndexArtifacts:
    return load_artifacts(out, expected_model=encoder.name, expected_dim=encoder.dim)


class TestBuildAndLoad:
    def test_build_load_round_trip(
        self, corpus: Path, built: Path, fake_encoder: HashingEncoder
    ) -> None:
        artifacts = load(built, fake_encoder)
        ids = [c.semantic_id for c in artifacts.chunks]
        assert ids == ["alpha_0", "alpha_1", "beta_0", "gamma_0", "gamma_1", "gamma_2"]
        assert artifacts.chunks[2].extra == {"k": "v"}
        assert artifacts.chunks[1].context_before == "Alpha is first."
        assert json.loads((built / "ids.json").read_text()) == ids
        manifest = artifacts.manifest
        assert (manifest.model, manifest.dim, manifest.chunk_count) == (
            fake_encoder.name,
            fake_encoder.dim,
            6,
        )
        assert (manifest.document_count, manifest.index_kind) == (3, "flat")
        assert manifest.sources == [str(corpus)]
        assert len(manifest.corpus_checksum) == 64
        assert datetime.fromisoformat(manifest.created_at).utcoffset().total_seconds() == 0  # type: ignore[union-attr]
        assert manifest.chunking["context"] == 1
        assert not manifest.reused
        assert len(artifacts.index_version) == 12

    def test_build_vectors_match_chunk_positions(
        self, built: Path, fake_encoder: HashingEncoder
    ) -> None:
        artifacts = load(built, fake_encoder)
        texts = embedding_texts(artifacts.chunks, artifacts.manifest.embed_text)
        _, positions = artifacts.index.search(fake_encoder.encode(texts), 1)
        assert positions[:, 0].tolist() == list(range(len(texts)))

    def test_build_full_ipc_with_fake_encoder(
        self, tmp_path: Path, fake_encoder: HashingEncoder
    ) -> None:
        manifest = build_artifacts([IPC], tmp_path / "ipc", fake_encoder, progress=False)
        artifacts = load(tmp_path / "ipc", fake_encoder)
        assert manifest.document_count == 574  # 575 sections, 304B has no text
        chunk = next(c for c in artifacts.chunks if c.semantic_id == "IPC_420_0")
        assert (chunk.act, chunk.section, chunk.chapter_title) == ("IPC", "420", "cheating")

    def test_build_records_chunks_longer_than_the_model_input(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        encoder = HashingEncoder(window_words=60)
        manifest = build_artifacts([IPC], tmp_path / "ipc", encoder, progress=False)
        artifacts = load(tmp_path / "ipc", encoder)
        texts = embedding_texts(artifacts.chunks, manifest.embed_text)
        expected = [
            c.semantic_id
            for c, t in zip(artifacts.chunks, texts, strict=True)
            if len(t.split()) > 60
        ]
        assert expected and manifest.over_window == expected
        assert load(tmp_path / "ipc", encoder).manifest.over_window == expected  # on disk
        assert "longer than the embedding model's input" in caplog.text

    @pytest.mark.parametrize(
        ("kind", "options"), [("hnsw", {"hnsw_m": 8}), ("ivf", {"ivf_nlist": 2, "ivf_nprobe": 2})]
    )
    def test_build_approximate_index_kinds(
        self,
        corpus: Path,
        tmp_path: Path,
        fake_encoder: HashingEncoder,
        kind: IndexKind,
        options: dict[str, int],
    ) -> None:
        build_artifacts(
            [corpus],
            tmp_path / kind,
            fake_encoder,
            index_kind=kind,
            index_options=options,
            progress=False,
        )
        artifacts = load(tmp_path / kind, fake_encoder)
        assert artifacts.index.kind == artifacts.manifest.index_kind == kind
        assert artifacts.manifest.index_options == options

    def test_build_leaves_no_temporary_directories(
        self, built: Path, corpus: Path, fake_encoder: HashingEncoder
    ) -> None:
        build_artifacts([corpus], built, fake_encoder, force_rebuild=True, progress=False)
        assert sorted(p.name for p in built.parent.iterdir()) == ["corpus.jsonl", "index"]
        assert sorted(p.name for p in built.iterdir()) == sorted(store.ARTIFACT_FILES)

    def test_build_crash_keeps_previous_index(
        self,
        built: Path,
        corpus: Path,
        fake_encoder: HashingEncoder,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        before = (built / "manifest.json").read_bytes()

        def crash(self: DenseIndex, path: Path) -> None:
            path.write_bytes(b"half")
            raise OSError("disk full")

        monkeypatch.setattr(DenseIndex, "save", crash)
        with pytest.raises(OSError, match="disk full"):
            build_artifacts([corpus], built, fake_encoder, force_rebuild=True, progress=False)
        assert (built / "manifest.json").read_bytes() == before
        assert [p.name for p in built.parent.iterdir() if p.name.startswith(".")] == []
        assert len(load(built, fake_encoder).chunks) == 6


class TestReuse:
    def test_build_reuses_unchanged_index(
        self,
        built: Path,
        corpus: Path,
        fake_encoder: HashingEncoder,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        calls, mtime = fake_encoder.calls, (built / "index.faiss").stat().st_mtime_ns
        with caplog.at_level(logging.INFO):
            manifest = build_artifacts([corpus], built, fake_encoder, progress=False)
        assert manifest.reused
        assert fake_encoder.calls == calls
        assert (built / "index.faiss").stat().st_mtime_ns == mtime
        assert "reusing" in caplog.text

    def test_build_force_rebuild(
        self, built: Path, corpus: Path, fake_encoder: HashingEncoder
    ) -> None:
        calls = fake_encoder.calls
        manifest = build_artifacts(
            [corpus], built, fake_encoder, force_rebuild=True, progress=False
        )
        assert not manifest.reused
        assert fake_encoder.calls > calls

    def test_build_rebuilds_when_the_act_registry_changes(
        self,
        built: Path,
        corpus: Path,
        fake_encoder: HashingEncoder,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        # The registry names each act and maps its statutes file's fields: an index built with
        # an older registry holds other documents (a data engineer renamed an act and got the
        # old index back, "reused").
        old = load(built, fake_encoder).manifest
        monkeypatch.setattr(store, "registry_digest", lambda: "another registry")
        manifest = build_artifacts([corpus], built, fake_encoder, progress=False)
        assert not manifest.reused
        assert manifest.corpus_checksum != old.corpus_checksum

    def test_build_rebuilds_when_source_changes(
        self, built: Path, corpus: Path, fake_encoder: HashingEncoder
    ) -> None:
        old = load(built, fake_encoder).manifest
        write_jsonl(corpus, [*RECORDS, {"doc_id": "delta", "text": "Delta arrives."}])
        manifest = build_artifacts([corpus], built, fake_encoder, progress=False)
        assert not manifest.reused
        assert manifest.chunk_count == 7
        assert manifest.corpus_checksum != old.corpus_checksum
        assert manifest.index_version != old.index_version

    @pytest.mark.parametrize(
        "change",
        [
            {"context": 2},
            {"embed_text": "text"},
            {"index_kind": "hnsw"},
            {"encoder": small_encoder(name="fake/other")},
            {"encoder": small_encoder(dim=8)},
        ],
    )
    def test_build_rebuilds_when_parameters_change(
        self, built: Path, corpus: Path, fake_encoder: HashingEncoder, change: dict[str, object]
    ) -> None:
        encoder = change.pop("encoder", fake_encoder)
        manifest = build_artifacts([corpus], built, encoder, progress=False, **change)  # type: ignore[arg-type]
        assert not manifest.reused

    def test_build_rebuilds_when_a_file_is_missing(
        self, built: Path, corpus: Path, fake_encoder: HashingEncoder
    ) -> None:
        (built / "ids.json").unlink()
        assert not build_artifacts([corpus], built, fake_encoder, progress=False).reused
        assert len(load(built, fake_encoder).chunks) == 6


class TestCorpusErrors:
    def test_build_duplicate_ids_across_sources(
        self, corpus: Path, tmp_path: Path, fake_encoder: HashingEncoder
    ) -> None:
        other = write_jsonl(tmp_path / "other.jsonl", [RECORDS[1]])
        with pytest.raises(CorpusFormatError, match="beta occurs in both"):
            build_artifacts([corpus, other], tmp_path / "out", fake_encoder, progress=False)

    def test_build_duplicate_ids_within_a_source(
        self, tmp_path: Path, fake_encoder: HashingEncoder
    ) -> None:
        path = write_jsonl(tmp_path / "c.jsonl", [RECORDS[0], RECORDS[1], RECORDS[0]])
        with pytest.raises(CorpusFormatError, match="alpha occurs twice in"):
            build_artifacts([path], tmp_path / "out", fake_encoder, progress=False)

    def test_build_same_statutes_file_twice(
        self, tmp_path: Path, fake_encoder: HashingEncoder
    ) -> None:
        with pytest.raises(CorpusFormatError, match="IPC_1 occurs twice"):
            build_artifacts([IPC, IPC], tmp_path / "out", fake_encoder, progress=False)

    def test_build_empty_corpus(self, tmp_path: Path, fake_encoder: HashingEncoder) -> None:
        path = write_jsonl(tmp_path / "c.jsonl", [{"doc_id": "a", "text": "   "}])
        with pytest.raises(CorpusFormatError, match="no text"):
            build_artifacts([path], tmp_path / "out", fake_encoder, progress=False)
        assert not (tmp_path / "out").exists()

    def test_build_missing_source(self, tmp_path: Path, fake_encoder: HashingEncoder) -> None:
        with pytest.raises(CorpusFormatError, match="no such file"):
            build_artifacts([tmp_path / "nope.jsonl"], tmp_path / "out", fake_encoder)


def rewrite_json(path: Path, edit: Callable[[Any], Any]) -> None:
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))


class TestIntegrity:
    @pytest.mark.parametrize("name", store.ARTIFACT_FILES)
    def test_load_missing_file_points_to_ingest(
        self, built: Path, fake_encoder: HashingEncoder, name: str
    ) -> None:
        (built / name).unlink()
        with pytest.raises(
            IndexIntegrityError, match=rf"lacks {name}.*services\.retrieval\.ingest"
        ):
            load(built, fake_encoder)

    def test_load_missing_directory(self, tmp_path: Path, fake_encoder: HashingEncoder) -> None:
        with pytest.raises(IndexIntegrityError, match="ingest"):
            load(tmp_path / "never-built", fake_encoder)

    def test_load_truncated_ids(self, built: Path, fake_encoder: HashingEncoder) -> None:
        rewrite_json(built / "ids.json", lambda ids: ids[:-1])
        with pytest.raises(IndexIntegrityError, match=r"counts disagree.*ids\.json=5"):
            load(built, fake_encoder)

    def test_load_truncated_chunks(self, built: Path, fake_encoder: HashingEncoder) -> None:
        lines = (built / "chunks.jsonl").read_text().splitlines()
        (built / "chunks.jsonl").write_text("\n".join(lines[:-2]) + "\n")
        with pytest.raises(IndexIntegrityError, match=r"chunks\.jsonl=4"):
            load(built, fake_encoder)

    def test_load_reordered_ids(self, built: Path, fake_encoder: HashingEncoder) -> None:
        rewrite_json(built / "ids.json", lambda ids: [ids[1], ids[0], *ids[2:]])
        with pytest.raises(IndexIntegrityError, match=r"ids\.json\[0\] is 'alpha_1'"):
            load(built, fake_encoder)

    def test_load_wrong_model(self, built: Path, fake_encoder: HashingEncoder) -> None:
        with pytest.raises(IndexIntegrityError, match="built with model 'fake/hash-encoder'"):
            load_artifacts(built, expected_model="other/model", expected_dim=fake_encoder.dim)

    def test_load_wrong_dim(self, built: Path, fake_encoder: HashingEncoder) -> None:
        with pytest.raises(IndexIntegrityError, match="dimension 16 but the model produces 384"):
            load_artifacts(built, expected_model=fake_encoder.name, expected_dim=384)

    def test_load_index_dim_disagrees_with_manifest(
        self, built: Path, fake_encoder: HashingEncoder
    ) -> None:
        DenseIndex.build(np.eye(6, 8, dtype=np.float32)).save(built / "index.faiss")
        with pytest.raises(IndexIntegrityError, match="index dimension 8 != manifest dimension 16"):
            load(built, fake_encoder)

    def test_load_index_kind_disagrees_with_manifest(
        self, built: Path, fake_encoder: HashingEncoder
    ) -> None:
        rewrite_json(built / "manifest.json", lambda m: {**m, "index_kind": "hnsw"})
        with pytest.raises(IndexIntegrityError, match="index is flat but the manifest says hnsw"):
            load(built, fake_encoder)

    def test_load_old_schema(self, built: Path, fake_encoder: HashingEncoder) -> None:
        rewrite_json(built / "manifest.json", lambda m: {**m, "schema_version": 0})
        with pytest.raises(IndexIntegrityError, match="schema 0"):
            load(built, fake_encoder)

    @pytest.mark.parametrize(
        ("name", "content"),
        [
            ("manifest.json", "{not json"),
            ("manifest.json", "[]"),
            ("ids.json", '{"a": 1}'),
            ("chunks.jsonl", '{"semantic_id": "x", "unknown_field": 1}\n'),
            ("index.faiss", "not a faiss index"),
        ],
    )
    def test_load_corrupt_file(
        self, built: Path, fake_encoder: HashingEncoder, name: str, content: str
    ) -> None:
        (built / name).write_text(content)
        with pytest.raises(IndexIntegrityError, match=name.replace(".", r"\.")):
            load(built, fake_encoder)


class TestManifest:
    def test_manifest_json_round_trip_drops_reused(self, built: Path) -> None:
        manifest = Manifest.from_json((built / "manifest.json").read_text())
        assert "reused" not in json.loads(manifest.to_json())
        assert Manifest.from_json(manifest.to_json()) == manifest

    def test_embedding_texts_variants(self) -> None:
        chunks = [
            Chunk("IPC_420_0", "IPC_420", "Whoever cheats.", "Cheating", section="420", act="IPC"),
            Chunk("COI_21A_0", "COI_21A", "Free education.", "Education", section="21A", act="COI"),
            Chunk("d_0", "d", "Plain."),
        ]
        assert embedding_texts(chunks, "text") == ["Whoever cheats.", "Free education.", "Plain."]
        assert embedding_texts(chunks, "title+text")[0] == "Cheating: Whoever cheats."
        assert embedding_texts(chunks, "heading+text") == [
            "Section 420. Cheating: Whoever cheats.",
            "Article 21A. Education: Free education.",
            "Plain.",
        ]
        with pytest.raises(ValueError, match="embed_text"):
            embedding_texts(chunks, "title")


class TestIngestCli:
    @pytest.fixture
    def fake_model(self, monkeypatch: pytest.MonkeyPatch) -> HashingEncoder:
        encoder = small_encoder()
        monkeypatch.setattr(embedding, "load_encoder", lambda *a, **k: encoder)
        return encoder

    def test_ingest_builds_then_reuses(
        self,
        corpus: Path,
        tmp_path: Path,
        fake_model: HashingEncoder,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        argv = ["--out", str(tmp_path / "idx"), "--quiet", str(corpus)]
        assert ingest.main(argv) == 0
        built = capsys.readouterr().out
        assert built.startswith(f"built {tmp_path / 'idx'}: 3 documents, 6 chunks")
        assert "chunks/s; model load" in built
        assert ingest.main(argv) == 0
        reused = capsys.readouterr().out
        assert reused.startswith("reused")
        # Nothing was embedded: no rate (it was chunks over the check's time, "267730 chunks/s").
        assert "chunks/s" not in reused
        assert "(model load " in reused
        assert ingest.main([*argv, "--force-rebuild", "--context", "0"]) == 0
        assert load(tmp_path / "idx", fake_model).manifest.chunking["context"] == 0

    def test_ingest_corpus_error_exits_non_zero(
        self, tmp_path: Path, fake_model: HashingEncoder, capsys: pytest.CaptureFixture[str]
    ) -> None:
        bad = tmp_path / "bad.jsonl"
        bad.write_text("{oops\n")
        assert ingest.main(["--out", str(tmp_path / "idx"), "--quiet", str(bad)]) == 1
        assert "error:" in capsys.readouterr().err
        assert not (tmp_path / "idx").exists()

    def test_ingest_default_and_all_statutes_sources(self, fake_model: HashingEncoder) -> None:
        assert ingest.parse_args(["--out", "x"]).sources == [ingest.DEFAULT_SOURCE]
        sources = ingest.parse_args(["--out", "x", "--all-statutes"]).sources
        assert {p.name for p in sources} >= {"ipc.json", "hma.json", "constitution_of_india.json"}

    @pytest.mark.parametrize(
        "argv", [["--context", "-1"], ["--batch-size", "0"], ["--index-type", "lsh"], []]
    )
    def test_ingest_rejects_bad_arguments(self, argv: list[str]) -> None:
        out = [] if not argv else ["--out", "x"]
        with pytest.raises(SystemExit) as info:
            ingest.parse_args([*out, *argv])
        assert info.value.code == 2


@pytest.fixture(scope="module")
def real_encoder() -> Iterator[embedding.Encoder]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    yield embedding.load_encoder()


@pytest.mark.slow
class TestRealEncoder:
    def test_real_encoder_shape_and_normalisation(self, real_encoder: embedding.Encoder) -> None:
        assert (real_encoder.name, real_encoder.dim) == (embedding.DEFAULT_MODEL_NAME, 384)
        vectors = real_encoder.encode(["Whoever cheats shall be punished.", "Theft."])
        assert vectors.shape == (2, 384) and vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert real_encoder.encode([]).shape == (0, 384)

    def test_real_encoder_ranks_the_matching_section_first(
        self, real_encoder: embedding.Encoder
    ) -> None:
        docs = ["Whoever cheats shall be punished with imprisonment.", "The sky is blue today."]
        index = DenseIndex.build(real_encoder.encode(docs))
        _, positions = index.search(real_encoder.encode(["punishment for cheating"]), 1)
        assert positions[0, 0] == 0

    def test_load_encoder_missing_path(self, tmp_path: Path) -> None:
        with pytest.raises(FileNotFoundError):
            embedding.load_encoder(str(tmp_path / "no-model"))

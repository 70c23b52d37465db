"""The query encoder on ONNX Runtime: the packaged model's vectors, checked before it serves."""

from __future__ import annotations

import gc
import os
import weakref
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from services.common.config import InvalidSettingError
from services.common.errors import ModelUnavailableError
from services.retrieval import embedding
from services.retrieval import server as retrieval_server
from services.retrieval.config import RetrievalConfig
from services.retrieval.embedding import (
    ONNX_TOLERANCE,
    OnnxQueryEncoder,
    SentenceTransformerEncoder,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def base() -> Iterator[SentenceTransformerEncoder]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    loaded = embedding.load_encoder()
    assert isinstance(loaded, SentenceTransformerEncoder)
    yield loaded


@pytest.fixture(scope="module")
def onnx(base: SentenceTransformerEncoder) -> OnnxQueryEncoder:
    return OnnxQueryEncoder(base)


class TestSameVectors:
    def test_a_query_alone(self, base: SentenceTransformerEncoder, onnx: OnnxQueryEncoder) -> None:
        texts = ["What is the punishment for cheating under section 420?"]
        got = onnx.encode(texts)
        assert got.dtype == np.float32 and got.shape == (1, base.dim)
        assert np.abs(got - base.encode(texts)).max() <= ONNX_TOLERANCE

    def test_a_padded_batch_split_into_blocks(
        self, base: SentenceTransformerEncoder, onnx: OnnxQueryEncoder
    ) -> None:
        texts = ["theft", "Whoever dishonestly takes any movable property " * 5, "hurt", "rape"]
        got = onnx.encode(texts, batch_size=3)
        assert np.abs(got - base.encode(texts)).max() <= ONNX_TOLERANCE
        assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)

    def test_a_text_past_the_input_is_read_as_torch_reads_it(
        self, base: SentenceTransformerEncoder, onnx: OnnxQueryEncoder
    ) -> None:
        text = "criminal breach of trust by a public servant " * 80
        assert len(base.windows(text)) > 1
        assert np.abs(onnx.encode([text]) - base.encode([text])).max() <= ONNX_TOLERANCE

    def test_windows_and_name_are_the_models(
        self, base: SentenceTransformerEncoder, onnx: OnnxQueryEncoder
    ) -> None:
        text = "dowry death " * 300
        assert onnx.windows(text) == base.windows(text)
        assert (onnx.name, onnx.dim) == (base.name, base.dim)
        assert onnx.encode([]).shape == (0, base.dim)


class TestRefusesToServe:
    def test_when_it_differs_from_torch(
        self, base: SentenceTransformerEncoder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        real = base.encode

        def shifted(texts: Any, **kw: Any) -> Any:
            vectors = real(texts, **kw)
            vectors[:, 0] += 1e-3
            return vectors

        monkeypatch.setattr(base, "encode", shifted)
        with pytest.raises(ModelUnavailableError, match="differs from torch"):
            OnnxQueryEncoder(base)

    def test_a_model_not_mean_pooled(self) -> None:
        class Transformer:
            pass

        class Pooling:
            pooling_mode = "cls"

        fake: Any = SimpleNamespace(
            name="cls-model", dim=4, tokenizer=object(), model=[Transformer(), Pooling()]
        )
        with pytest.raises(ModelUnavailableError, match="EMBEDDING_RUNTIME=torch"):
            OnnxQueryEncoder(fake)


def memory_files() -> list[str]:
    """This process's open descriptors of the exporter's in-memory graph file."""
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:  # the descriptor listdir itself held
            continue
    return [link for link in links if "grounded-embedding-graph" in link]


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memfd_create is Linux-only")
class TestGraphInMemory:
    """The exported graph reaches the session through an anonymous memory file where the
    platform has one (85 MiB less resident than a bytes copy), else from bytes: same vectors."""

    QUERY = "what is the punishment for cheating"

    def test_through_a_memory_file_closed_once_loaded(
        self, base: SentenceTransformerEncoder, onnx: OnnxQueryEncoder, monkeypatch: Any
    ) -> None:
        made: list[str] = []
        real = os.memfd_create

        def recording(name: str, flags: int = 0) -> int:
            made.append(name)
            return real(name, flags)

        monkeypatch.setattr(os, "memfd_create", recording)
        again = OnnxQueryEncoder(base)
        assert made == ["grounded-embedding-graph"] and memory_files() == []
        assert np.array_equal(again.encode([self.QUERY]), onnx.encode([self.QUERY]))

    def test_from_bytes_where_memfd_create_is_refused(
        self, base: SentenceTransformerEncoder, onnx: OnnxQueryEncoder, monkeypatch: Any
    ) -> None:
        def refused(name: str, flags: int = 0) -> int:
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(os, "memfd_create", refused)
        again = OnnxQueryEncoder(base)
        assert np.array_equal(again.encode([self.QUERY]), onnx.encode([self.QUERY]))


class TestSetting:
    def test_onnx_by_default_torch_on_request(self) -> None:
        assert RetrievalConfig.from_env({}).embedding_runtime == "onnx"
        config = RetrievalConfig.from_env({"RETRIEVAL_EMBEDDING_RUNTIME": "torch"})
        assert config.embedding_runtime == "torch"

    def test_an_unknown_runtime_is_refused(self) -> None:
        with pytest.raises(InvalidSettingError, match="RETRIEVAL_EMBEDDING_RUNTIME"):
            RetrievalConfig.from_env({"RETRIEVAL_EMBEDDING_RUNTIME": "tensorrt"})

    def test_the_service_encodes_queries_as_configured(
        self, base: SentenceTransformerEncoder
    ) -> None:
        torch_config = RetrievalConfig.from_env({"RETRIEVAL_EMBEDDING_RUNTIME": "torch"})
        assert retrieval_server.query_encoder(base, torch_config) is base
        chosen = retrieval_server.query_encoder(base, RetrievalConfig.from_env({}))
        assert isinstance(chosen, OnnxQueryEncoder) and chosen.base is base

    def test_the_service_lets_go_of_the_torch_weights_once_checked(
        self, onnx: OnnxQueryEncoder
    ) -> None:
        """Serving needs only the tokenizer and the session: the service drops its reference to
        the torch model, so the weights go once no one else holds them, and the vectors stay
        the same. A caller that still holds the torch encoder (a test's shared one) can go on
        encoding with it."""
        fresh = embedding.load_encoder()
        assert isinstance(fresh, SentenceTransformerEncoder)
        weights = weakref.ref(fresh.model)
        config = RetrievalConfig.from_env({})
        chosen = retrieval_server.query_encoder(fresh, config, release_torch=True)
        assert isinstance(chosen, OnnxQueryEncoder) and chosen.base.model is None
        query = "what is the punishment for theft"
        assert fresh.encode([query]).shape == (1, fresh.dim)
        del fresh
        gc.collect()
        assert weights() is None
        assert np.array_equal(chosen.encode([query]), onnx.encode([query]))
        assert chosen.windows(query) == onnx.windows(query)
        with pytest.raises(ModelUnavailableError, match="released"):
            chosen.base.encode([query])

    def test_the_service_frees_them_before_the_index_loads(self, monkeypatch: Any) -> None:
        """build_searcher loads its own encoder: once the ONNX session is checked, the torch
        weights are gone (collected, their module tree holding cycles) before the index loads."""
        seen: dict[str, Any] = {}

        def load(*args: object, **kwargs: object) -> SentenceTransformerEncoder:
            loaded = embedding.load_encoder()
            assert isinstance(loaded, SentenceTransformerEncoder)
            seen["weights"] = weakref.ref(loaded.model)
            return loaded

        class Stop(Exception):
            pass

        def artifacts(*args: object, **kwargs: object) -> None:
            seen["alive"] = seen["weights"]() is not None
            raise Stop

        monkeypatch.setattr(retrieval_server, "load_encoder", load)
        monkeypatch.setattr(retrieval_server, "load_artifacts", artifacts)
        with pytest.raises(Stop):
            retrieval_server.build_searcher(RetrievalConfig.from_env({}))
        assert seen["alive"] is False

    def test_onnx_needs_a_sentence_transformers_model(self) -> None:
        other: Any = SimpleNamespace(name="some-encoder", dim=4)
        with pytest.raises(ModelUnavailableError, match="RETRIEVAL_EMBEDDING_RUNTIME"):
            retrieval_server.query_encoder(other, RetrievalConfig.from_env({}))

"""Domain modules never import grpc, generated stubs, openai, redis or a model runtime: only
adapters may. Serving code never imports the training code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FORBIDDEN = (
    "grpc",
    "grpc_health",
    "grpc_reflection",
    "grpc_status",
    "grounded",
    "openai",
    "redis",
    "google.rpc",
    "onnxruntime",
    "tokenizers",
)

# Adapter and wiring modules: the only places allowed to touch outside libraries.
ADAPTERS = {
    "services/common/status.py",
    "services/common/interceptors.py",
    "services/common/server.py",
    "services/common/channels.py",
    "services/common/passages.py",
    "services/common/validation_proto.py",
    "services/common/redis_store.py",
    "services/common/judge_client.py",
    "services/retrieval/convert.py",
    "services/retrieval/servicer.py",
    "services/retrieval/server.py",
    "services/retrieval/cache.py",
    "services/retrieval/cli.py",
    "services/common/cli_errors.py",
    "services/synthesis/convert.py",
    "services/synthesis/servicer.py",
    "services/synthesis/server.py",
    "services/synthesis/clients.py",
    "services/synthesis/openai_generator.py",
    "services/synthesis/cli.py",
    "services/validator/convert.py",
    "services/validator/servicer.py",
    "services/validator/server.py",
    # Model runtimes (ONNX Runtime and the Rust tokenizer) behind the cross-encoder adapters.
    "services/common/cross_encoder.py",
    "services/validator/nli_onnx.py",
    # The embedding model's adapter (sentence-transformers, and its tokenizer for windows).
    "services/retrieval/embedding.py",
}


def _package(path: Path, root: Path) -> list[str]:
    """The dotted package ``path`` belongs to (``services/a/b.py`` and ``services/a/__init__.py``
    both belong to ``services.a``), as parts."""
    return list(path.relative_to(root).parent.parts)


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """Every module ``path`` imports, absolute: ``from x import y`` names ``x`` and ``x.y`` (``y``
    may be a module), and a relative import is resolved against the package of ``path``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = _package(path, root)
                assert node.level - 1 <= len(package), f"{path}: import beyond the top package"
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module:
                names.add(module)
            names.update(f"{module}.{a.name}".lstrip(".") for a in node.names if a.name != "*")
    return names


def _forbidden(name: str) -> bool:
    return (
        any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
        or name.endswith("_pb2")
        or "_pb2" in name
    )


class TestImports:
    def test_imports_resolves_relative_and_from_imports(self, tmp_path: Path) -> None:
        module = tmp_path / "services" / "synthesis" / "pipeline.py"
        module.parent.mkdir(parents=True)
        module.write_text(
            "import grpc.aio\n"
            "from . import clients\n"
            "from .convert import request_from_proto\n"
            "from ..retrieval import search\n"
            "from ..common.language.text import *\n"
            "from grounded.type.v1 import evidence_pb2\n"
        )

        assert _imports(module, tmp_path) == {
            "grpc.aio",
            "services.synthesis",
            "services.synthesis.clients",
            "services.synthesis.convert",
            "services.synthesis.convert.request_from_proto",
            "services.retrieval",
            "services.retrieval.search",
            "services.common.language.text",
            "grounded.type.v1",
            "grounded.type.v1.evidence_pb2",
        }

    def test_imports_resolves_relative_imports_in_a_package_init(self, tmp_path: Path) -> None:
        init = tmp_path / "services" / "validator" / "__init__.py"
        init.parent.mkdir(parents=True)
        init.write_text("from .engine import validate\nfrom .. import synthesis\n")

        assert _imports(init, tmp_path) == {
            "services.validator.engine",
            "services.validator.engine.validate",
            "services",
            "services.synthesis",
        }


class TestLayering:
    def test_layering_domain_modules_import_no_adapters(self) -> None:
        offenders = {}
        for path in sorted((ROOT / "services").rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in ADAPTERS or path.name == "__main__.py":
                continue
            bad = sorted(n for n in _imports(path) if _forbidden(n))
            if bad:
                offenders[rel] = bad
        assert offenders == {}

    @pytest.mark.parametrize("tooling", ["training", "stack", "bench", "evaluation", "tests"])
    def test_layering_serving_code_never_imports_tooling(self, tooling: str) -> None:
        # Training code, the stack starter, benchmarks, the evaluation harness and tests use the
        # services; the services never use them (the image ships services/ alone).
        offenders = {
            path.relative_to(ROOT).as_posix(): sorted(
                n for n in _imports(path) if n == tooling or n.startswith(tooling + ".")
            )
            for path in sorted((ROOT / "services").rglob("*.py"))
        }
        assert {k: v for k, v in offenders.items() if v} == {}

    def test_layering_adapter_list_names_existing_files(self) -> None:
        missing = [a for a in ADAPTERS if not (ROOT / a).exists()]
        assert missing == []

    def test_layering_language_layer_imports_no_service_code(self) -> None:
        # services/common/language is the one definition of a sentence (and, as issue 14 lands,
        # of tokens and references): pure, so every service can use it without coupling.
        offenders = {
            path.relative_to(ROOT).as_posix(): sorted(
                n
                for n in _imports(path)
                if n.startswith("services.") and not n.startswith("services.common.language")
            )
            for path in sorted((ROOT / "services/common/language").rglob("*.py"))
        }
        assert {k: v for k, v in offenders.items() if v} == {}

    @pytest.mark.parametrize(
        ("service", "others"),
        [
            ("synthesis", ("retrieval", "validator")),
            ("retrieval", ("synthesis", "validator")),
            ("validator", ("retrieval", "synthesis")),
        ],
    )
    def test_layering_no_service_imports_another(
        self, service: str, others: tuple[str, ...]
    ) -> None:
        # Issue 14: what two services share (the validation report and its proto conversion,
        # the language layer, intents) lives in services/common; a service never imports another.
        reached = {
            n
            for path in sorted((ROOT / "services" / service).rglob("*.py"))
            for n in _imports(path)
            if any(n == f"services.{o}" or n.startswith(f"services.{o}.") for o in others)
        }
        assert reached == set()

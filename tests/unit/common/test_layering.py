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
}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _forbidden(name: str) -> bool:
    return (
        any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
        or name.endswith("_pb2")
        or "_pb2" in name
    )


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

"""The services start on what the image installs: requirements-runtime.lock, not the dev lock.

The image installs the runtime lock only (Dockerfile), while tests run in the dev venv, which
holds more. So a module a service needs at start-up but only the dev lock pins passes every
other test and stops the pod. Here each start-up path runs in a child process where every
installed package the runtime lock does not pin cannot be imported.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_pins() -> set[str]:
    text = (ROOT / "requirements-runtime.lock").read_text()
    return {normalised(m) for m in re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", text, re.M)}


def dev_only_modules() -> list[str]:
    """Top-level modules every distribution of which is installed but not in the runtime lock."""
    pins = runtime_pins()
    return sorted(
        module
        for module, dists in packages_distributions().items()
        if module.isidentifier() and not any(normalised(d) in pins for d in dists)
    )


# Each service's start-up work that reaches beyond its own code: the retrieval query encoder
# (torch's exporter, ONNX Runtime), the two shipped cross-encoders, the three server modules.
START_UP = """
import sys
for name in json.loads(sys.argv[1]):
    sys.modules[name] = None  # import raises ImportError, as in the image
from services.retrieval import server as retrieval_server
from services.synthesis import server as synthesis_server
from services.validator import server as validator_server
from services.retrieval.config import RetrievalConfig
from services.retrieval.embedding import load_encoder
from services.common.answerability_model import load_scorer
from pathlib import Path
encoder = retrieval_server.query_encoder(load_encoder(), RetrievalConfig.from_env({}))
assert type(encoder).__name__ == "OnnxQueryEncoder", encoder
load_scorer(Path("models/answerability-minilm-l6"))
load_scorer(Path("models/entailment-minilm-l6"), label="entailment")
print("started")
"""


def test_the_lock_tells_dev_only_modules_apart() -> None:
    blocked = dev_only_modules()
    # The dev lock's own tools are blocked, the runtime's models and servers are not.
    assert {"pytest", "mypy"} <= set(blocked)
    assert not {"onnxruntime", "torch", "grpc", "onnx", "faiss"} & set(blocked)


def test_every_start_up_path_runs_on_the_runtime_lock_alone() -> None:
    script = "import json\n" + textwrap.dedent(START_UP)
    result = subprocess.run(
        [sys.executable, "-c", script, json.dumps(dev_only_modules())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("started")

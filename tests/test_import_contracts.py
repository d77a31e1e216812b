"""The import contracts in pyproject.toml (`[tool.importlinter]`) hold for this tree, and they
are not vacuous: the same contracts over a small stand-in tree of the ten packages pass, and
each wrong import below, added to that tree, breaks the contract that names it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "bench", "engine", "dlm_kernels", "reference", "sessions", "sprout", "training", "visualizer",
            "world")
# What each package may import, as in the real tree: the stand-in starts legal.
LEGAL = {
    "app": "import visualizer.page\nimport sessions.store\nimport world.tools\nimport engine.core\n",
    "visualizer": "import world.tools\nimport engine.core\n",
    "sessions": "import engine.core\n",
    "world": "import engine.core\nimport sprout.chat\n",
    "bench": "import world.tools\nimport engine.core\nimport reference.loop\n",
    "training": "import world.tools\nimport engine.core\nimport sprout.chat\nimport dlm_kernels.ops\n",
    "reference": "import torch\n",
    "engine": "import sprout.chat\nimport dlm_kernels.ops\nimport transformers\n",
    "sprout": "import dlm_kernels.ops\n",
    "dlm_kernels": "import torch\n",
}
MODULE = {"app": "ui", "visualizer": "page", "sessions": "store", "world": "tools", "bench": "agent",
          "training": "train", "reference": "loop", "engine": "core", "sprout": "chat", "dlm_kernels": "ops"}
# The torch-free types (the contract names them, so the stand-in has them too).
TYPES = ("trace", "setting_rules", "sampler_table", "tool_calls", "errors", "json_limits")


def lint(root: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "lint-imports"
    assert exe.exists(), "import-linter is in requirements-dev.txt; install it"
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(exe), "--no-cache", "--no-logo", str(root / "pyproject.toml")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


def stand_in_tree(root: Path, extra: tuple[str, str] | None = None) -> Path:
    (root / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    for package in PACKAGES:
        (root / package).mkdir()
        (root / package / "__init__.py").write_text("")
        source = LEGAL[package] + (extra[1] + "\n" if extra and extra[0] == package else "")
        (root / package / f"{MODULE[package]}.py").write_text(source)
    for name in TYPES:
        (root / "engine" / f"{name}.py").write_text(extra[1] + "\n" if extra and extra[0] == f"engine.{name}" else "")
    return root


def test_the_repository_keeps_its_contracts():
    result = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--no-cache", "--no-logo"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_stand_in_tree_is_legal(tmp_path):
    result = lint(stand_in_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(("package", "wrong", "contract"), [
    ("engine", "import app.ui", "layers"),
    ("engine", "import world.tools", "layers"),                 # the generation core knows no world
    ("world", "import visualizer.page", "layers"),
    ("sprout", "import engine.core", "layers"),
    ("dlm_kernels", "import engine.core", "layers"),
    ("visualizer", "import sessions.store", "layers"),
    ("engine", "from training import train", "nothing that ships imports"),
    ("app", "import bench.agent", "nothing that ships imports"),
    ("world", "import reference.loop", "nothing that ships imports"),
    ("training", "import app.ui", "training needs no UI"),
    ("reference", "import engine.core", "the reference loops import none"),
    ("engine.trace", "import torch", "load no torch"),
    ("engine.sampler_table", "import engine.core", "load no torch"),    # engine.core imports transformers
    ("dlm_kernels", "import transformers", "kernels use torch and triton only"),
])
def test_a_wrong_import_breaks_its_contract(tmp_path, package, wrong, contract):
    result = lint(stand_in_tree(tmp_path, (package, wrong)))
    assert result.returncode != 0, result.stdout
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN")]
    assert any(contract in line for line in broken), result.stdout

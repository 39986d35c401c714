"""The core's include rules (scripts/check_includes.py): they hold on the tree, and a wrong
include planted in a copy of it is caught and named."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKER = ROOT / "scripts" / "check_includes.py"

pytestmark = pytest.mark.skipif(not (ROOT / "csrc" / "core").is_dir(), reason="needs the source tree")


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True, text=True,
                          timeout=60)


def _copy_tree(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "csrc", tmp_path / "csrc")
    return tmp_path


def test_the_tree_keeps_its_include_rules() -> None:
    result = _check(ROOT)
    assert result.returncode == 0, result.stdout


def _plant(root: Path, file: str, include: str) -> None:
    path = root / file
    text = path.read_text()
    anchor = text.index("#include")
    path.write_text(text[:anchor] + f'#include "{include}"\n' + text[anchor:])


@pytest.mark.parametrize(("file", "include", "expected"), [
    # A lower area reaching up: the model reader must not know about planning.
    ("csrc/core/model/weights.cc", "vllm_mem/plan/startup_plan.h", "area 'model' may not include"),
    ("csrc/core/memory/memory_snapshot.cc", "vllm_mem/kv_cache/kv_cache_spec.h", "area 'memory' may not include"),
    # A public header exposing an internal one.
    ("csrc/core/include/vllm_mem/plan/startup_plan.h", "core/base/checked_math.h", "public header may not include"),
    # Logic hiding in the bindings.
    ("csrc/bindings/bind_plan.cc", "core/model/parallelism.h", "bindings include public headers only"),
    # Python or torch in the core.
    ("csrc/core/base/units.cc", "pybind11/pybind11.h", "the core is pure C++"),
])
def test_a_planted_wrong_include_is_caught(tmp_path: Path, file: str, include: str, expected: str) -> None:
    root = _copy_tree(tmp_path)
    assert _check(root).returncode == 0
    _plant(root, file, include)
    result = _check(root)
    assert result.returncode == 1
    assert expected in result.stdout and file in result.stdout, result.stdout

"""No function in csrc/core over 80 lines (scripts/check_function_length.py): the rule holds on
the tree, a long function planted in a copy of it is caught and named, and the scanner measures
what an editor shows (signature line to closing brace)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKER = ROOT / "scripts" / "check_function_length.py"

pytestmark = pytest.mark.skipif(not (ROOT / "csrc" / "core").is_dir(), reason="needs the source tree")


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True, text=True, timeout=60)


def _scanner():
    spec = importlib.util.spec_from_file_location("check_function_length", CHECKER)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_the_tree_keeps_functions_short() -> None:
    result = _check(ROOT)
    assert result.returncode == 0, result.stdout


def test_a_planted_long_function_is_named(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "csrc", tmp_path / "csrc")
    path = tmp_path / "csrc" / "core" / "plan" / "plan_verdict.cc"
    body = "".join(f"  total += {i};\n" for i in range(79))
    planted = f"\nnamespace vllm_mem {{\nint Planted(int total) {{\n{body}  return total;\n}}\n}}\n"
    path.write_text(path.read_text() + planted)
    result = _check(tmp_path)
    assert result.returncode == 1
    assert "csrc/core/plan/plan_verdict.cc" in result.stdout and "Planted is 82 lines" in result.stdout


def test_the_scanner_counts_signature_to_closing_brace() -> None:
    scan = _scanner()
    text = (
        "namespace a {\n"  # 1
        "struct S { int f() const { return 1; } };\n"  # 2: a method inside a class
        "// int NotCode() { a comment }\n"  # 3
        "std::string G(int x,\n"  # 4
        "              int y) {\n"  # 5
        '  const char* s = "}{";\n'  # 6: braces in a string
        "  auto l = [&] { return x; };\n"  # 7: a lambda is part of G
        '  if (x) { return ""; }\n'  # 8
        "  return {};\n"  # 9
        "}\n"  # 10
        "}  // namespace a\n"
    )
    found = {name: (line, length) for name, line, length in scan.functions(text)}
    assert found == {"f": (2, 1), "G": (4, 7)}

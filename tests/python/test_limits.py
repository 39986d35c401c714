"""The Python layer's bounds are the core's (csrc/core/include/vllm_mem/base/limits.h and json.h):
read the headers and compare, so a change on one side fails here instead of drifting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from vllm_mem import _limits as L

INCLUDE = Path(__file__).resolve().parents[2] / "csrc" / "core" / "include" / "vllm_mem" / "base"


def _constants(header: Path) -> dict[str, str]:
    text = header.read_text()
    return dict(re.findall(r"inline constexpr \w+ (k\w+) = ([^;]+);", text))


def _value(expr: str, known: dict[str, int]) -> int:
    expr = re.sub(r"int64_t\{(\d+)\}", r"\1", expr).strip()
    for name, value in known.items():
        expr = re.sub(rf"\b{name}\b", str(value), expr)
    return int(eval(expr, {"__builtins__": {}}))  # shifts, products and literals only


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name[1:]).upper()


@pytest.mark.parametrize("header", ["limits.h", "json.h"])
def test_python_bounds_match_the_core(header: str) -> None:
    path = INCLUDE / header
    if not path.exists():
        pytest.skip(f"{header} is not in this checkout")
    known: dict[str, int] = {}
    compared = 0
    for name, expr in _constants(path).items():
        if "." in expr or "e" in expr.lower().replace("int64_t", ""):
            continue  # floating-point bounds (rope factor) are the core's alone
        known[name] = _value(expr, known)
        python_name = _snake(name)
        if hasattr(L, python_name):
            assert getattr(L, python_name) == known[name], python_name
            compared += 1
    assert compared >= (10 if header == "limits.h" else 3)

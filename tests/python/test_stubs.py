"""The shipped type stubs of vllm_mem._C cover every public name the extension exports."""

from __future__ import annotations

import ast
from pathlib import Path

import vllm_mem
from vllm_mem import _C


def _stub_names() -> set[str]:
    stub = Path(vllm_mem.__file__).with_name("_C.pyi")
    tree = ast.parse(stub.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_every_public_binding_has_a_stub() -> None:
    exported = {name for name in dir(_C) if not name.startswith("_")}
    missing = sorted(exported - _stub_names())
    assert not missing, f"_C.pyi lacks {missing}; run scripts/gen_stubs.sh"


def test_py_typed_marker_ships() -> None:
    assert Path(vllm_mem.__file__).with_name("py.typed").is_file()


def test_request_settings_are_typed() -> None:
    """The request objects' properties (getters and setters) carry their rows' types in the stub
    (scripts/stub_setting_types.py), never typing.Any."""
    stub = Path(vllm_mem.__file__).with_name("_C.pyi")
    tree = ast.parse(stub.read_text())
    rows = {row["name"] for row in _C.plan_settings()}
    typed: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name in ("KvCacheSettings", "PlanRequest")):
            continue
        for fn in node.body:
            if isinstance(fn, ast.FunctionDef) and fn.name in rows:
                annotation = fn.returns if len(fn.args.args) == 1 else fn.args.args[1].annotation
                typed[f"{node.name}.{fn.name}({len(fn.args.args)})"] = ast.unparse(annotation) if annotation else ""
    assert len(typed) == 2 * len(rows), sorted(typed)  # a getter and a setter per row
    untyped = sorted(name for name, annotation in typed.items() if annotation in ("", "typing.Any"))
    assert not untyped, f"typed as Any in _C.pyi: {untyped}; run scripts/gen_stubs.sh"

"""Types the request classes' property setters in _C.pyi from the settings table.

pybind11-stubgen reads a setter's signature from the binding, where every setting's setter takes
a Python object (`py::handle`: the table's row converts and checks it, bindings/bind_settings.cc),
so it writes `typing.Any`. What each setter accepts is the row's kind, a str where the row has a
word for its auto value, and None where it has an "unset" value; this writes that type. Run by
scripts/gen_stubs.sh after the generator:

    PYTHONPATH=build/dev-NAME/site python3 scripts/stub_setting_types.py python/vllm_mem/_C.pyi
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from vllm_mem import _C

#: The Python type a setter of each kind takes (Setting<T>::From in bindings/bind_settings.cc).
KIND_TYPES = {
    "int": "int",
    "float": "float",
    "bool": "bool",
    "optional bool": "bool | None",
    "str": "str",
    "enum": "str",
    "int list": "list[int] | tuple[int, ...] | None",
    "text list": "list[str] | tuple[str, ...] | None",
    "mapping": "dict[str, typing.Any] | str",
}
CLASSES = ("KvCacheSettings", "PlanRequest")


def setter_types() -> dict[str, str]:
    types = {}
    for row in _C.plan_settings():
        kind = KIND_TYPES[row["kind"]]
        if row["kind"] == "mapping" and row["high"]:  # a bounded mapping row also takes the int form
            kind = "int | " + kind
        if row.get("auto_text"):  # a word for the row's auto value ("auto" for max_model_len)
            kind += " | str"
        types[row["name"]] = kind + " | None" if row["unset"] and "None" not in kind else kind
    return types


def typed(stub: str, types: dict[str, str]) -> str:
    out, cls = [], None
    lines = stub.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("class "):
            cls = re.match(r"class (\w+)", line).group(1)  # type: ignore[union-attr]
        setter = re.match(r"    @(\w+)\.setter$", lines[i - 1].rstrip("\n")) if i else None
        if cls in CLASSES and setter and setter.group(1) in types:
            line = f"    def {setter.group(1)}(self, value: {types[setter.group(1)]}) -> None:\n"
        out.append(line)
    return "".join(out)


if __name__ == "__main__":
    path = Path(sys.argv[1])
    path.write_text(typed(path.read_text(), setter_types()))

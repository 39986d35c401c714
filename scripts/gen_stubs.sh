#!/usr/bin/env bash
# Regenerates python/vllm_mem/_C.pyi (the typed surface of the C++ module) from a dev build.
# tests/python/test_stubs.py fails when a binding is added without regenerating.
#   bash scripts/gen_stubs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q pybind11-stubgen
bash scripts/dev_build.sh stubs >/dev/null
out=$(mktemp -d)
PYTHONPATH=build/dev-stubs/site python3 -m pybind11_stubgen vllm_mem._C -o "$out" \
  --numpy-array-remove-parameters
# pybind11 returns of py::dict / py::list carry no element types; say Any explicitly for mypy --strict.
sed -E -e 's/-> dict:/-> dict[str, typing.Any]:/' -e 's/-> list:/-> list[typing.Any]:/' \
  "$out/vllm_mem/_C.pyi" > python/vllm_mem/_C.pyi
# The request classes' setters take a Python object the table's row checks: type them by row.
PYTHONPATH=build/dev-stubs/site python3 scripts/stub_setting_types.py python/vllm_mem/_C.pyi
echo "wrote python/vllm_mem/_C.pyi"

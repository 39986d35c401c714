#!/usr/bin/env bash
# Developer loop without installing: builds the extension and the C++ tests into
# build/dev-NAME and lays out build/dev-NAME/site/vllm_mem as symlinks to python/vllm_mem plus
# the built modules, so several people can build side by side in one checkout.
#
#   bash scripts/dev_build.sh NAME [EXTRA CMAKE ARGS...]
#   PYTHONPATH=build/dev-NAME/site python -m pytest tests/python/test_x.py
#   ctest --test-dir build/dev-NAME -R Name
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: dev_build.sh NAME [EXTRA CMAKE ARGS...]}
shift
dir=build/dev-$name
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVLLM_MEM_BUILD_CXX_TESTS=ON \
  -DVLLM_MEM_WARNINGS_AS_ERRORS=ON \
  -DPython_EXECUTABLE="$(command -v python3)" "$@" >/dev/null
cmake --build "$dir" -j 2
site=$dir/site/vllm_mem
rm -rf "$dir/site"
mkdir -p "$site"
for entry in python/vllm_mem/*; do ln -s "$PWD/$entry" "$site/$(basename "$entry")"; done
for so in "$dir"/_C*.so "$dir"/_torch_provider*.so; do
  [[ -e "$so" ]] && ln -s "$PWD/$so" "$site/$(basename "$so")"
done
echo "built $dir; use PYTHONPATH=$dir/site"

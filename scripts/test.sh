#!/usr/bin/env bash
# Runs every test: sets up the machine (scripts/setup.sh --test), builds and runs the C++ core
# tests through CTest, then the Python tests with pytest. GPU tests skip cleanly without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

stage_start=$SECONDS
stage_done() { echo "== $1 took $((SECONDS - stage_start)) s"; stage_start=$SECONDS; }

bash scripts/setup.sh --test
stage_done "setup (packages, build and install)"

echo "== C++ core tests (GoogleTest through CTest)"
cmake -S . -B build/cxx-tests -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DVLLM_MEM_BUILD_PYTHON=OFF -DVLLM_MEM_BUILD_CXX_TESTS=ON -DVLLM_MEM_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build build/cxx-tests -j "$(nproc)"
ctest --test-dir build/cxx-tests --output-on-failure -j "$(nproc)"
stage_done "C++ core tests (g++)"

echo "== C++ checks: clang, AddressSanitizer + UBSan, fuzz smoke (scripts/ci_cxx_checks.sh)"
bash scripts/ci_cxx_checks.sh
stage_done "clang, sanitizers and fuzz smoke"

echo "== the crashing toolchain: _C with a static libstdc++ (scripts/ci_static_libstdcxx.sh)"
bash scripts/ci_static_libstdcxx.sh
stage_done "static libstdc++ build and its tests"

echo "== Python tests (pytest)"
# Run from outside the source tree so the installed package, not python/, is imported.
# pytest's own closing line (with its duration) stays the last line of the log.
"$PYTHON" -m pytest -c pyproject.toml --rootdir . tests/python "$@"

#!/usr/bin/env bash
# Runs every test: sets up the machine (scripts/setup.sh --test), builds and runs the C++ core
# tests through CTest, then the Python tests with pytest. GPU tests skip cleanly without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
# Everything runs in the environment scripts/setup.sh made (.venv, no system site-packages),
# so a dependency that set-up forgets fails here as it would on a user's fresh machine.
# PYTHON=/path/python uses that interpreter's environment instead, as scripts/setup.sh does.
if [[ -z ${PYTHON:-} ]]; then
  PYTHON=$PWD/${VLLM_MEM_VENV:-.venv}/bin/python
  setup_env=()
else
  setup_env=(PYTHON="$PYTHON")
fi

stage_start=$SECONDS
stage_done() { echo "== $1 took $((SECONDS - stage_start)) s"; stage_start=$SECONDS; }
# Under CI a step that set-up could not prepare fails the run instead of skipping.
need_or_skip() {  # need_or_skip WHAT: returns 1 (skip) off CI, exits 1 on CI
  if [[ -n ${CI:-} ]]; then echo "test.sh: $1 is missing on CI" >&2; exit 1; fi
  echo "== skipped: $1 is missing (scripts/setup.sh --test installs it where apt works)"
  return 1
}

env "${setup_env[@]}" bash scripts/setup.sh --test
# The environment's python3, cmake and ninja come first for every later step.
export PATH="$(dirname "$PYTHON"):$PATH"
stage_done "setup (packages, build and install)"

if compgen -G "/usr/lib/*/cmake/GTest/GTestConfig.cmake" >/dev/null ||
   compgen -G "/usr/lib*/cmake/GTest/GTestConfig.cmake" >/dev/null || need_or_skip "GoogleTest"; then
  echo "== C++ core tests (GoogleTest through CTest)"
  cmake -S . -B build/cxx-tests -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$PYTHON" \
    -DVLLM_MEM_BUILD_PYTHON=OFF -DVLLM_MEM_BUILD_CXX_TESTS=ON -DVLLM_MEM_WARNINGS_AS_ERRORS=ON >/dev/null
  cmake --build build/cxx-tests -j "$(nproc)"
  ctest --test-dir build/cxx-tests --output-on-failure -j "$(nproc)"
  stage_done "C++ core tests (g++)"
fi

if command -v clang++ >/dev/null || need_or_skip "clang++"; then
  echo "== C++ checks: clang, AddressSanitizer + UBSan, fuzz smoke (scripts/ci_cxx_checks.sh)"
  bash scripts/ci_cxx_checks.sh
  stage_done "clang, sanitizers and fuzz smoke"
fi

echo "== the crashing toolchain: _C with a static libstdc++ (scripts/ci_static_libstdcxx.sh)"
bash scripts/ci_static_libstdcxx.sh
stage_done "static libstdc++ build and its tests"

echo "== Python tests (pytest)"
# Run from outside the source tree so the installed package, not python/, is imported.
# pytest's own closing line (with its duration) stays the last line of the log.
"$PYTHON" -m pytest -c pyproject.toml --rootdir . tests/python "$@"

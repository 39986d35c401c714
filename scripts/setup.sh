#!/usr/bin/env bash
# Sets up a fresh machine for vllm_mem: system packages (GoogleTest for the C++ tests), Python
# packages (CPU PyTorch for the allocator provider path, test tools), then builds and installs
# vllm_mem itself into the current Python environment.
#
#   bash scripts/setup.sh          # install the package
#   bash scripts/setup.sh --test   # also what the test suite needs (GoogleTest, clang, pytest,
#                                  # hypothesis, torch, and the notebook side below)
#   bash scripts/setup.sh --notebook  # also Chromium and the notebook packages (setup_notebook.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
want_tests=0
want_notebook=0
for arg in "$@"; do
  case "$arg" in
    --test) want_tests=1; want_notebook=1 ;;  # the suite includes the browser and notebook tests
    --notebook) want_notebook=1 ;;
    *) echo "setup.sh: unknown option $arg (use --test or --notebook)" >&2; exit 2 ;;
  esac
done

sudo_if_needed() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

if [[ $want_tests -eq 1 ]] && [[ ! -f /usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake ]] \
   && ! ls /usr/lib/*/cmake/GTest/GTestConfig.cmake >/dev/null 2>&1; then
  echo "== installing GoogleTest (Debian libgtest-dev)"
  sudo_if_needed apt-get update -qq
  sudo_if_needed apt-get install -y -qq libgtest-dev cmake g++ >/dev/null
fi
# scripts/ci_cxx_checks.sh (run by scripts/test.sh): clang as the second compiler, its
# sanitizer and libFuzzer runtimes, and Ninja for its builds.
if [[ $want_tests -eq 1 ]] && { ! command -v clang++ >/dev/null || ! command -v ninja >/dev/null ||
   [[ ! -f "$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ]]; }; then
  echo "== installing clang, its sanitizer/libFuzzer runtimes and Ninja (Debian clang, libclang-rt-14-dev, ninja-build)"
  sudo_if_needed apt-get update -qq
  sudo_if_needed apt-get install -y -qq clang libclang-rt-14-dev libgtest-dev ninja-build >/dev/null
fi

echo "== installing build and runtime requirements"
"$PYTHON" -m pip install -q --disable-pip-version-check \
  "scikit-build-core>=0.10" "pybind11>=2.12" "nlohmann-json>=3.11" "numpy>=1.22" "PyYAML>=6" "psutil>=5" ninja
if [[ $want_tests -eq 1 ]]; then
  # torch==2.13.0 is a CPU build on these machines: it exercises the torch provider's build and
  # its 'no CUDA allocator' path. Skipped where a torch is already installed (GPU hosts).
  "$PYTHON" -c "import torch" 2>/dev/null || "$PYTHON" -m pip install -q --disable-pip-version-check torch==2.13.0
  "$PYTHON" -m pip install -q --disable-pip-version-check "pytest>=8" "hypothesis>=6" "pyelftools>=0.29" pandas
fi
if [[ $want_notebook -eq 1 ]]; then
  bash scripts/setup_notebook.sh
fi

echo "== building and installing vllm_mem"
# No build isolation: the torch provider must be built against the torch installed here.
"$PYTHON" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps .
echo "== vllm_mem installed: $("$PYTHON" -c 'import vllm_mem; print(vllm_mem.__version__)')"

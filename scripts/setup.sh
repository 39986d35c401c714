#!/usr/bin/env bash
# Sets up vllm_mem from a fresh clone: a virtual environment (.venv), the build tools, every
# runtime dependency the package declares, then builds and installs vllm_mem into it.
#
#   bash scripts/setup.sh          # the package and its runtime dependencies, in .venv
#   bash scripts/setup.sh --test   # also what the test suite needs (pytest, hypothesis, CPU torch,
#                                  # and, where apt can install them, GoogleTest, clang, Chromium)
#   bash scripts/setup.sh --notebook          # also the notebook packages and Chromium
#   bash scripts/setup.sh --system-site-packages  # the venv sees the system's packages: a GPU
#                                  # host keeps its own CUDA torch (scripts/gpu_check.sh)
#
# Where: .venv in the repository (VLLM_MEM_VENV=DIR for another folder). PYTHON=/path/python
# installs into that interpreter's environment instead, with no venv (it must be writable: a
# venv, conda or user site; an externally managed system Python is refused by pip, PEP 668).
# Afterwards: `source .venv/bin/activate`, or call .venv/bin/vllm-mem directly.
#
# Nothing here needs apt. Apt-only extras (GoogleTest for the C++ tests, clang and its runtimes
# for the second compiler and the fuzzers, Chromium for the browser test) are installed when apt
# works and otherwise reported as skipped; the steps that need them skip with a note.
set -euo pipefail
cd "$(dirname "$0")/.."
want_tests=0
want_notebook=0
system_site=0
for arg in "$@"; do
  case "$arg" in
    --test) want_tests=1; want_notebook=1 ;;  # the suite includes the browser and notebook tests
    --notebook) want_notebook=1 ;;
    --system-site-packages) system_site=1 ;;
    *) echo "setup.sh: unknown option $arg (use --test, --notebook or --system-site-packages)" >&2; exit 2 ;;
  esac
done

can_apt() { command -v apt-get >/dev/null && { [[ $(id -u) -eq 0 ]] || sudo -n true 2>/dev/null; }; }
as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo -n "$@"; fi; }
apt_updated=0
apt_install() {  # apt_install PKG...: 0 when installed, 1 (with a note) when apt is not usable
  can_apt || return 1
  if [[ $apt_updated -eq 0 ]]; then as_root apt-get update -qq >/dev/null 2>&1 || true; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
    >/dev/null 2>&1
}
skipped=()

# --- the Python environment -------------------------------------------------------------------
if [[ -n ${PYTHON:-} ]]; then
  echo "== using PYTHON=$PYTHON (no virtual environment made)"
else
  venv=${VLLM_MEM_VENV:-.venv}
  base=$(command -v python3 || true)
  [[ -n $base ]] || { echo "setup.sh: python3 (>= 3.10) is needed" >&2; exit 1; }
  "$base" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' ||
    { echo "setup.sh: Python >= 3.10 is needed; $base is $("$base" -V 2>&1)" >&2; exit 1; }
  if [[ ! -x $venv/bin/python ]]; then
    echo "== creating the virtual environment $venv"
    venv_args=()
    [[ $system_site -eq 1 ]] && venv_args+=(--system-site-packages)
    if ! "$base" -m venv "${venv_args[@]}" "$venv" 2>/dev/null; then
      # Debian and Ubuntu ship venv's ensurepip separately (python3-venv / python3.X-venv).
      rm -rf "$venv"
      ver=$("$base" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
      apt_install python3-venv "python$ver-venv" || apt_install python3-venv ||
        { echo "setup.sh: '$base -m venv' failed and python3-venv cannot be installed here;" \
               "install it, or pass PYTHON=/path/to/a/venv/python" >&2; exit 1; }
      "$base" -m venv "${venv_args[@]}" "$venv"
    fi
  fi
  PYTHON=$PWD/$venv/bin/python
fi
# pip's warnings about index folders it skips (some machines' pip.conf names empty local mirrors)
# are noise here; every other line of pip's stderr is kept.
pip_install() {
  "$PYTHON" -m pip install -q --disable-pip-version-check "$@" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}

# --- build tools (all from PyPI) ----------------------------------------------------------------
echo "== installing the build tools (scikit-build-core, pybind11, nlohmann-json, CMake, Ninja)"
pip_install "pip>=23" "scikit-build-core>=0.10" "pybind11>=2.12" "nlohmann-json>=3.11" \
  "cmake>=3.22" "ninja>=1.11"
# The venv's cmake and ninja come first for the C++ test builds of scripts/test.sh.
export PATH="$(dirname "$PYTHON"):$PATH"

if [[ $want_tests -eq 1 ]]; then
  # torch==2.13.0 is a CPU build: it exercises the torch provider's build and its 'no CUDA
  # allocator' path. Installed before vllm_mem so that the provider is built against it; skipped
  # where a torch is already importable (a GPU host's own torch, seen through
  # --system-site-packages).
  "$PYTHON" -c "import torch" 2>/dev/null || { echo "== installing torch 2.13.0 (CPU)"; pip_install torch==2.13.0; }
fi

# --- vllm_mem and its declared dependencies ---------------------------------------------------
echo "== building and installing vllm_mem with its dependencies"
# No build isolation: the torch provider must be built against the torch installed here. Without
# --no-deps, pip installs every runtime dependency pyproject.toml declares.
extras=""
[[ $want_tests -eq 1 ]] && extras="[test]"
pip_install --no-build-isolation ".$extras"

# --- optional, apt-only extras ----------------------------------------------------------------
if [[ $want_tests -eq 1 ]]; then
  # Any one of the distributions' places is enough (ls fails when one glob matches nothing).
  gtest_found() { compgen -G "/usr/lib*/cmake/GTest/GTestConfig.cmake" >/dev/null ||
    compgen -G "/usr/lib/*/cmake/GTest/GTestConfig.cmake" >/dev/null; }
  if ! gtest_found; then
    echo "== installing GoogleTest (Debian libgtest-dev)"
    apt_install libgtest-dev || skipped+=("GoogleTest (apt libgtest-dev): the C++ core tests will skip")
  fi
  # scripts/ci_cxx_checks.sh: clang as the second compiler, its sanitizer and libFuzzer runtimes.
  if ! command -v clang++ >/dev/null ||
     [[ ! -f "$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ]]; then
    echo "== installing clang and its sanitizer/libFuzzer runtimes (Debian clang, libclang-rt-14-dev)"
    apt_install clang libclang-rt-14-dev ||
      skipped+=("clang (apt clang libclang-rt-14-dev): the clang, sanitizer and fuzz checks will skip")
  fi
fi
if [[ $want_notebook -eq 1 ]]; then
  PYTHON=$PYTHON bash scripts/setup_notebook.sh || skipped+=("notebook extras: see the message above")
fi

if [[ $want_tests -eq 1 ]]; then
  echo "== pip check"
  "$PYTHON" -m pip check
fi
for s in "${skipped[@]}"; do echo "== skipped: $s"; done
echo "== vllm_mem $("$PYTHON" -c 'import vllm_mem; print(vllm_mem.__version__)') installed into $("$PYTHON" -c 'import sys; print(sys.prefix)')"
if [[ -n ${venv:-} ]]; then
  echo "   activate it with: source $venv/bin/activate   (or run $venv/bin/vllm-mem directly)"
fi

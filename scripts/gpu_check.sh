#!/usr/bin/env bash
# GPU acceptance run: on a host with an NVIDIA GPU, from a fresh checkout, with the host's own
# compiler and the host's own torch (never a torch from PyPI: the provider must match the torch
# that serving workers load), build vllm_mem, run the C++ tests, the pytest suite, the GPU tests
# (which must not skip), the symbol and linkage checks, the GPU benchmarks and the diagnosis of
# the first H100 run's 256 MiB vs 1 GiB finding, and write every figure to docs/gpu-acceptance.md
# with a description of the host.
#
#   bash scripts/gpu_check.sh                 # a bare GPU host: makes build/gpu-check-venv
#   PYTHON=/path/venv/bin/python bash scripts/gpu_check.sh   # an environment you already have
#   REPORT=/tmp/r.md bash scripts/gpu_check.sh
#   GPU_CHECK_PYTEST_ARGS="-n 8" PYTHON=python3 bash scripts/gpu_check.sh   # the suite on 8 workers
#   GPU_CHECK_FAKE_DRIVER=1 PYTHON=.venv/bin/python REPORT=/tmp/r.md bash scripts/gpu_check.sh
#
# Environment: without PYTHON=, `scripts/setup.sh --test --system-site-packages` makes a virtual
# environment (GPU_CHECK_VENV, default build/gpu-check-venv) that sees the host's torch, leaves the
# system Python alone (PEP 668) and brings CMake and Ninja from PyPI. With PYTHON=, that
# interpreter is used as it is and vllm_mem is rebuilt into it.
#
# GPU_CHECK_FAKE_DRIVER=1 runs the script itself on a CPU machine: the fake CUDA driver and NVML
# of tests/fake_driver stand in for the GPU, nothing is built or installed (the vllm_mem that
# PYTHON imports is used; PYTHONPATH is honoured), the suite is cut to the fake-driver tests, and
# the GPU-test step is expected to fail (every GPU test skips without torch CUDA), which shows
# that the "no GPU test may skip" check fires. tests/python/test_fake_driver_gpu_check.py runs it.
#
# Exit status: 0 when every step passed, 1 otherwise (the report is written either way and says
# which step failed or was skipped, and why), 2 when no GPU is visible (and not in fake mode).
set -uo pipefail
cd "$(dirname "$0")/.."
REPORT=${REPORT:-docs/gpu-acceptance.md}
FAKE=${GPU_CHECK_FAKE_DRIVER:-0}
log_dir=$(mktemp -d)
steps=()
declare -A result reason seconds

step() {  # step NAME COMMAND...: runs, keeps the log, records the outcome
  local name=$1; shift
  local start=$SECONDS
  steps+=("$name")
  echo "== $name"
  if "$@" >"$log_dir/$name.log" 2>&1; then
    result[$name]=passed
    echo "   passed in $((SECONDS - start)) s"
  else
    result[$name]=FAILED
    echo "   FAILED in $((SECONDS - start)) s (log: $log_dir/$name.log)"
    tail -30 "$log_dir/$name.log"
  fi
  seconds[$name]=$((SECONDS - start))
}

skip() {  # skip NAME REASON: a step that cannot run here, reported as skipped with the reason
  steps+=("$1")
  result[$1]=skipped
  reason[$1]=$2
  seconds[$1]=0
  echo "== $1: skipped ($2)"
}

# --- the GPU, or the fake driver ----------------------------------------------------------------
if [[ $FAKE == 1 ]]; then
  PYTHON=${PYTHON:-python3}
  fake_root=$log_dir/fake
  "$PYTHON" -c "import sys; sys.path.insert(0, 'tests/python'); from pathlib import Path; \
from fake_driver import build_fake_driver; build_fake_driver(Path('$fake_root'))" ||
    { echo "gpu_check.sh: cannot build the fake CUDA driver (a C compiler is needed)" >&2; exit 2; }
  export LD_LIBRARY_PATH="$fake_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export VLLM_MEM_FAKE_DRIVER_STATE=$log_dir/fake_state.ini
  export VLLM_MEM_FAKE_DRIVER_LOG=$log_dir/fake_calls.log
  printf 'device_count = 1\ndevice.0.total_bytes = 85899345920\ndevice.0.free_bytes = 84825604096\n' \
    >"$VLLM_MEM_FAKE_DRIVER_STATE"
else
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu_check.sh: no NVIDIA GPU visible (nvidia-smi -L failed); run this on a GPU host," \
         "or GPU_CHECK_FAKE_DRIVER=1 to check the script itself" >&2
    exit 2
  fi
fi

# --- the environment ----------------------------------------------------------------------------
if [[ -n ${PYTHON:-} ]]; then
  skip setup "PYTHON=$PYTHON given: that environment is used as it is"
  if [[ $FAKE == 1 ]]; then
    skip build "fake-driver mode: the vllm_mem that PYTHON imports is checked, nothing is built"
  else
    # Build requirements from PyPI into PYTHON's environment only where one is missing (a GPU
    # image without network has them, or gets them as wheels); vllm_mem alone is (re)installed,
    # with no dependency touched: torch, numpy and the test tools stay the environment's.
    step build bash -c "{ '$PYTHON' -c 'import scikit_build_core, pybind11, nlohmann_json, cmake, ninja' 2>/dev/null || \
      '$PYTHON' -m pip install -q --disable-pip-version-check 'scikit-build-core>=0.10' \
      'pybind11>=2.12' 'nlohmann-json>=3.11' 'cmake>=3.22' ninja; } && \
      CMAKE_BUILD_PARALLEL_LEVEL=\$(nproc) '$PYTHON' -m pip install -v --disable-pip-version-check --no-build-isolation \
      --no-deps --force-reinstall ."
  fi
else
  venv=${GPU_CHECK_VENV:-build/gpu-check-venv}
  # --system-site-packages: the venv sees the host's CUDA torch (setup.sh installs no torch where
  # one is importable); CMake and Ninja come from PyPI; the system Python is not written to.
  step setup env VLLM_MEM_VENV="$venv" bash scripts/setup.sh --test --system-site-packages
  PYTHON=$PWD/$venv/bin/python
  skip build "scripts/setup.sh built and installed vllm_mem into $venv"
fi
export PATH="$(dirname "$PYTHON"):$PATH"  # the environment's cmake and ninja first
if [[ $FAKE != 1 ]] &&
   ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu_check.sh: $PYTHON's torch is missing or has no CUDA; this check uses the host's torch" \
       "(install a CUDA torch system-wide or give PYTHON=)" >&2
  exit 2
fi

# --- C++ tests: GoogleTest comes from the system; without it they are reported as skipped --------
if [[ $FAKE == 1 ]]; then
  skip ctest "fake-driver mode: nothing is built"
elif ! ls /usr/lib/*/cmake/GTest/GTestConfig.cmake /usr/lib*/cmake/GTest/GTestConfig.cmake \
        /usr/local/lib*/cmake/GTest/GTestConfig.cmake >/dev/null 2>&1; then
  skip ctest "GoogleTest is not installed (Debian libgtest-dev); the C++ tests were not built"
else
  step ctest bash -c "cmake -S . -B build/gpu-check-cxx -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DVLLM_MEM_BUILD_PYTHON=OFF -DVLLM_MEM_BUILD_CXX_TESTS=ON >/dev/null && \
    cmake --build build/gpu-check-cxx -j \"\$(nproc)\" && ctest --test-dir build/gpu-check-cxx -j \"\$(nproc)\""
fi

# --- the shipped shared objects: exported symbols and linkage ------------------------------------
so_dir=$("$PYTHON" -c 'import os, vllm_mem._C as c; print(os.path.dirname(os.path.realpath(c.__file__)))')
step symbols bash -c "for f in '$so_dir'/*.so; do echo \"\$f: \$(nm -D --defined-only \"\$f\" | wc -l) exported\"; \
  nm -D --defined-only \"\$f\"; done; \
  ! nm -D --defined-only '$so_dir'/*.so | grep -E ' (_ZNSt|_ZSt|__cxa|_ZN9__gnu_cxx)'"
# NEEDED lines say what the dynamic loader will bring in: no libstdc++.so.6 among them means g++
# linked libstdc++ statically (-static-libstdc++, or a toolchain with only the static library).
linkage() {
  for f in "$so_dir"/*.so; do
    echo "$f"
    readelf -d "$f" | grep NEEDED | sed 's/^ */  /'
    if readelf -d "$f" | grep -q 'libstdc++\.so'; then
      echo "  => libstdc++ linked dynamically"
    else
      echo "  => libstdc++ linked statically (no libstdc++.so NEEDED)"
    fi
  done
}
step linkage linkage

# --- pytest ------------------------------------------------------------------------------------
if [[ $FAKE == 1 ]]; then
  # The fake-driver tests are the suite's real-device part that runs without a GPU; the whole
  # suite is CI's job and takes far longer than this mode's budget.
  step pytest "$PYTHON" -m pytest -q -c pyproject.toml --rootdir . -p no:cacheprovider -ra \
    tests/python/test_fake_driver.py tests/python/test_import_no_cuda.py -k "not gpu_check"
else
  # GPU_CHECK_PYTEST_ARGS: e.g. "-n 8" (pytest-xdist) where the host has cores to spare.
  # shellcheck disable=SC2086
  step pytest "$PYTHON" -m pytest -c pyproject.toml --rootdir . tests/python -ra -p no:cacheprovider ${GPU_CHECK_PYTEST_ARGS:-}
fi
# The GPU tests alone: a skipped GPU test on a GPU host is a failure of the acceptance run.
gpu_tests() {
  "$PYTHON" -m pytest -c pyproject.toml --rootdir . tests/python -m gpu -ra -p no:cacheprovider -q
  local rc=$?
  local skipped
  skipped=$(grep -Eo '[0-9]+ skipped' "$log_dir/gpu_tests.log" | tail -1 | grep -Eo '[0-9]+')
  if [[ -n $skipped && $skipped != 0 ]]; then
    echo "gpu_check.sh: $skipped GPU test(s) skipped; on a GPU host every GPU test must run"
    return 1
  fi
  if ! grep -Eq '[0-9]+ passed' "$log_dir/gpu_tests.log"; then
    echo "gpu_check.sh: no GPU test ran"
    return 1
  fi
  return $rc
}
step gpu_tests gpu_tests
if [[ $FAKE == 1 && ${result[gpu_tests]} == FAILED ]] && grep -q "GPU test(s) skipped" "$log_dir/gpu_tests.log"; then
  result[gpu_tests]="FAILED as expected"
  reason[gpu_tests]="fake-driver mode has no torch CUDA: $(grep -Eo '[0-9]+ GPU test\(s\) skipped' "$log_dir/gpu_tests.log")"
fi

# --- the live snapshot, benchmarks, diagnosis -----------------------------------------------------
step snapshot "$PYTHON" -m vllm_mem snapshot
if [[ $FAKE == 1 ]]; then
  for b in bench_snapshot bench_import bench_sizing; do skip "$b" "fake-driver mode: figures of a fake are no figures"; done
  skip diag_256MiB "fake-driver mode: needs torch with CUDA"
else
  step bench_snapshot "$PYTHON" benchmarks/bench_snapshot.py
  step bench_import "$PYTHON" benchmarks/bench_import.py
  step bench_sizing "$PYTHON" benchmarks/bench_sizing.py
  step diag_256MiB "$PYTHON" scripts/gpu_diag_nontorch.py
fi

# --- the report -----------------------------------------------------------------------------------
if [[ $FAKE == 1 ]]; then
  gpu="fake CUDA driver (tests/fake_driver), $("$PYTHON" -c 'from vllm_mem import _C; print(_C.cuda_driver_status())')"
else
  gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)
fi
failed=()
{
  echo "# GPU acceptance run"
  echo
  echo "Written by \`scripts/gpu_check.sh\`$([[ $FAKE == 1 ]] && echo " in fake-driver mode") on $(date -u +%Y-%m-%d) from commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo
  echo "## Host"
  echo
  echo "- GPU: $gpu"
  echo "- torch: $("$PYTHON" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null || echo "not importable")"
  echo "- Python: $PYTHON ($("$PYTHON" -c 'import sys; print(sys.version.split()[0])')), numpy $("$PYTHON" -c 'import numpy; print(numpy.__version__)' 2>/dev/null || echo none), pybind11 $("$PYTHON" -c 'import pybind11; print(pybind11.__version__)' 2>/dev/null || echo none), cmake $(cmake --version 2>/dev/null | head -1 | awk '{print $3}')"
  echo "- Compiler: $(c++ --version 2>/dev/null | head -1)"
  echo "- OS: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}"), $(uname -r)"
  echo
  echo "## Steps"
  echo
  echo "| step | result | seconds |"
  echo "|---|---|---|"
  for s in "${steps[@]}"; do
    r=${result[$s]}
    [[ -n ${reason[$s]:-} ]] && r="$r: ${reason[$s]}"
    echo "| $s | $r | ${seconds[$s]} |"
    [[ ${result[$s]} == FAILED ]] && failed+=("$s")
  done
  for s in pytest gpu_tests; do
    [[ -f $log_dir/$s.log ]] || continue
    echo
    echo "## $s"
    echo
    echo '```'
    grep -E "passed|failed|PASSED|FAILED|SKIPPED|ERROR|skipped|gpu_check.sh:" "$log_dir/$s.log" | tail -40
    echo '```'
  done
  for s in linkage symbols snapshot bench_snapshot bench_import bench_sizing diag_256MiB; do
    [[ -f $log_dir/$s.log ]] || continue
    echo
    case $s in
      linkage) echo "## Linkage (readelf -d NEEDED of each shipped .so)" ;;
      symbols) echo "## Exported symbols of the installed shared objects" ;;
      snapshot) echo "## vllm-mem snapshot (NVML, no CUDA context)" ;;
      diag_256MiB) echo "## The 256 MiB vs 1 GiB finding: every figure, from vllm_mem and from torch" ;;
      *) echo "## $s" ;;
    esac
    echo
    if [[ $s == diag_256MiB ]]; then
      cat "$log_dir/$s.log"  # already a table and a diagnosis line
    else
      echo '```'
      cat "$log_dir/$s.log"
      echo '```'
    fi
  done
} >"$REPORT"
echo "wrote $REPORT"
if ((${#failed[@]})); then
  echo "failed steps: ${failed[*]}"
  exit 1
fi
echo "all steps passed"

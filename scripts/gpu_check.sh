#!/usr/bin/env bash
# GPU acceptance run: on a host with an NVIDIA GPU, from a fresh checkout, with the host's own
# compiler and the host's own torch (never a torch from PyPI: the provider must match the torch
# that serving workers load), build vllm_mem, run the C++ tests, the whole pytest suite with the
# GPU tests, the symbol-export check and the GPU benchmarks, and write every figure to
# docs/gpu-acceptance.md with a description of the host.
#
#   bash scripts/gpu_check.sh            # writes docs/gpu-acceptance.md (commit it)
#   REPORT=/tmp/r.md bash scripts/gpu_check.sh
#
# Exit status: 0 when every step passed, 1 otherwise (the report is written either way and says
# which step failed).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
REPORT=${REPORT:-docs/gpu-acceptance.md}
log_dir=$(mktemp -d)
failed=()

step() {  # step NAME COMMAND...: runs, keeps the log, records a failure
  local name=$1; shift
  local start=$SECONDS
  echo "== $name"
  if "$@" >"$log_dir/$name.log" 2>&1; then
    echo "   passed in $((SECONDS - start)) s"
  else
    echo "   FAILED in $((SECONDS - start)) s (log: $log_dir/$name.log)"
    tail -30 "$log_dir/$name.log"
    failed+=("$name")
  fi
  echo "$((SECONDS - start))" >"$log_dir/$name.seconds"
}

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check.sh: no NVIDIA GPU visible (nvidia-smi -L failed); run this on a GPU host" >&2
  exit 2
fi
if ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu_check.sh: the host's torch is missing or has no CUDA; this check uses the host's torch" >&2
  exit 2
fi

# Build requirements only; torch is the host's. No build isolation, default compiler.
step setup "$PYTHON" -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" \
  "pybind11>=2.12" "nlohmann-json>=3.11" "PyYAML>=6" "psutil>=5" ninja "pytest>=7" hypothesis \
  pyelftools pandas
step build "$PYTHON" -m pip install -v --disable-pip-version-check --no-build-isolation --no-deps \
  --force-reinstall .
step ctest bash -c "cmake -S . -B build/gpu-check-cxx -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DVLLM_MEM_BUILD_PYTHON=OFF -DVLLM_MEM_BUILD_CXX_TESTS=ON >/dev/null && \
  cmake --build build/gpu-check-cxx -j \"\$(nproc)\" && ctest --test-dir build/gpu-check-cxx -j \"\$(nproc)\""
step symbols bash -c "so=\$(cd /tmp && $PYTHON -c 'import vllm_mem._C as c; print(c.__file__)'); \
  for f in \$(dirname \"\$so\")/*.so; do echo \"\$f: \$(nm -D --defined-only \"\$f\" | wc -l) exported\"; \
  nm -D --defined-only \"\$f\"; done; \
  ! nm -D --defined-only \$(dirname \"\$so\")/*.so | grep -E ' (_ZNSt|_ZSt|__cxa|_ZN9__gnu_cxx)'"
step pytest "$PYTHON" -m pytest -c pyproject.toml --rootdir . tests/python -ra -p no:cacheprovider
step bench_snapshot "$PYTHON" benchmarks/bench_snapshot.py
step bench_import "$PYTHON" benchmarks/bench_import.py
step bench_sizing "$PYTHON" benchmarks/bench_sizing.py

gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)
{
  echo "# GPU acceptance run"
  echo
  echo "Written by \`scripts/gpu_check.sh\` on $(date -u +%Y-%m-%d) from commit $(git rev-parse --short HEAD)."
  echo
  echo "## Host"
  echo
  echo "- GPU: $gpu"
  echo "- CUDA (torch): $("$PYTHON" -c 'import torch; print(torch.version.cuda)'), torch $("$PYTHON" -c 'import torch; print(torch.__version__)')"
  echo "- Python: $("$PYTHON" -c 'import sys; print(sys.version.split()[0])'), numpy $("$PYTHON" -c 'import numpy; print(numpy.__version__)' 2>/dev/null), pybind11 $("$PYTHON" -c 'import pybind11; print(pybind11.__version__)')"
  echo "- Compiler: $(c++ --version | head -1); libstdc++ shared library present: $(ls /usr/lib*/x86_64-linux-gnu/libstdc++.so.6 /usr/lib64/libstdc++.so.6 2>/dev/null | head -1 || echo no)"
  echo "- OS: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}"), $(uname -r)"
  echo
  echo "## Steps"
  echo
  echo "| step | result | seconds |"
  echo "|---|---|---|"
  for s in setup build ctest symbols pytest bench_snapshot bench_import bench_sizing; do
    result=passed
    for f in "${failed[@]}"; do [[ $f == "$s" ]] && result=FAILED; done
    echo "| $s | $result | $(cat "$log_dir/$s.seconds" 2>/dev/null) |"
  done
  echo
  echo "## pytest (GPU tests included)"
  echo
  echo '```'
  grep -E "passed|failed|PASSED|FAILED|SKIPPED|ERROR" "$log_dir/pytest.log" | tail -40
  echo '```'
  echo
  echo "## Exported symbols of the installed shared objects"
  echo
  echo '```'
  cat "$log_dir/symbols.log"
  echo '```'
  for b in bench_snapshot bench_import bench_sizing; do
    echo
    echo "## $b"
    echo
    echo '```'
    cat "$log_dir/$b.log"
    echo '```'
  done
} >"$REPORT"
echo "wrote $REPORT"
if ((${#failed[@]})); then
  echo "failed steps: ${failed[*]}"
  exit 1
fi
echo "all steps passed"

#!/usr/bin/env bash
# The C++ checks CI runs besides the g++ build of scripts/test.sh (issue 9, "sanitizers and a
# second compiler"):
#
#   1. clang:      the core and its GoogleTest suite built with clang++ and -Werror, then ctest;
#   2. sanitizers: the same under AddressSanitizer + UndefinedBehaviorSanitizer, halting on the
#                  first report, then ctest;
#   3. fuzz smoke: the libFuzzer harnesses of tests/fuzz (same sanitizers) run for a short,
#                  fixed time each over their seed corpus; any crash, sanitizer report,
#                  timeout or out-of-memory fails the stage.
#
#   bash scripts/ci_cxx_checks.sh
#   VLLM_MEM_SKIP_CLANG=1 VLLM_MEM_SKIP_SANITIZERS=1 bash scripts/ci_cxx_checks.sh  # fuzz smoke only
#
# Environment: VLLM_MEM_SKIP_CLANG, VLLM_MEM_SKIP_SANITIZERS, VLLM_MEM_SKIP_FUZZ (=1 skips the
# stage); VLLM_MEM_FUZZ_SECONDS (per harness, default 20); VLLM_MEM_CI_JOBS (default 2: CI has
# 2 cores). Build folders: build/ci-clang, build/ci-asan. Prints each stage's duration in
# seconds and exits non-zero when any stage fails (the later stages still run, so one log shows
# every failure).
set -uo pipefail
cd "$(dirname "$0")/.."

JOBS=${VLLM_MEM_CI_JOBS:-2}
FUZZ_SECONDS=${VLLM_MEM_FUZZ_SECONDS:-20}
HARNESSES=(fuzz_json fuzz_gpu_name fuzz_model_config fuzz_stage_config)
# Halt on the first report of either sanitizer, with a stack, so nothing is printed and ignored.
# (The build already passes -fno-sanitize-recover=all; these make the runtime agree.)
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

if ! command -v clang++ >/dev/null; then
  echo "ci_cxx_checks: clang++ not found; run 'bash scripts/setup.sh --test' (Debian: clang, libclang-rt-14-dev)" >&2
  exit 1
fi
GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)

failures=()
timings=()

# run_stage NAME SKIP_VAR FUNCTION: runs FUNCTION unless $SKIP_VAR=1, records its duration.
run_stage() {
  local name=$1 skip_var=$2 fn=$3
  if [[ "${!skip_var:-0}" == "1" ]]; then
    echo "== [$name] skipped ($skip_var=1)"
    timings+=("$name: skipped")
    return
  fi
  echo "== [$name] start"
  local start=$SECONDS
  if "$fn"; then
    timings+=("$name: $((SECONDS - start)) s")
    echo "== [$name] passed in $((SECONDS - start)) s"
  else
    timings+=("$name: $((SECONDS - start)) s (FAILED)")
    failures+=("$name")
    echo "== [$name] FAILED after $((SECONDS - start)) s"
  fi
}

# ctest with the output of failing tests only, and its summary (a line per passing test is noise).
run_ctest() {
  ctest --test-dir "$1" --output-on-failure -j "$JOBS" | grep -v -E '^ *(Start +[0-9]+:|[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed)'
}

stage_clang() {
  cmake -S . -B build/ci-clang "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER=clang++ -DVLLM_MEM_BUILD_PYTHON=OFF -DVLLM_MEM_BUILD_CXX_TESTS=ON \
    -DVLLM_MEM_WARNINGS_AS_ERRORS=ON >/dev/null &&
    cmake --build build/ci-clang -j "$JOBS" &&
    run_ctest build/ci-clang
}

# One instrumented build serves the sanitizer tests and the fuzz harnesses: clang, because
# libFuzzer needs it and the core then compiles once for both stages (g++ would compile it a
# second time; measured on 2 cores, clang -O1 with ASan+UBSan also compiles the core and tests
# faster than g++ at the same level). -O1 is the usual sanitizer level: it keeps stacks readable
# and compiles much faster than -O3, and the tests and fuzz runs stay fast.
configure_asan() {
  cmake -S . -B build/ci-asan "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1" -DCMAKE_CXX_COMPILER=clang++ \
    -DVLLM_MEM_BUILD_PYTHON=OFF -DVLLM_MEM_BUILD_CXX_TESTS=ON -DVLLM_MEM_BUILD_FUZZERS=ON \
    -DVLLM_MEM_WARNINGS_AS_ERRORS=ON -DVLLM_MEM_SANITIZE="address;undefined" >/dev/null
}

stage_sanitizers() {
  configure_asan &&
    cmake --build build/ci-asan -j "$JOBS" --target vllm_mem_cxx_tests &&
    run_ctest build/ci-asan
}

stage_fuzz() {
  configure_asan && cmake --build build/ci-asan -j "$JOBS" --target "${HARNESSES[@]}" || return 1
  local ok=0 harness out dict max_len
  for harness in "${HARNESSES[@]}"; do
    # New inputs go to a scratch folder; the committed seeds are only read.
    out=build/ci-asan/fuzz-corpus/$harness
    mkdir -p "$out"
    dict=()
    # GPU names past 256 bytes all take the same refusal path: 4 KiB inputs keep the smoke run
    # on the lookup and the fuzzy match.
    max_len=65536
    [[ $harness == fuzz_gpu_name ]] && max_len=4096
    case $harness in
      fuzz_model_config) dict=(-dict=tests/fuzz/config.dict) ;;
      fuzz_stage_config) dict=(-dict=tests/fuzz/stage.dict) ;;
      fuzz_json) dict=(-dict=tests/fuzz/json.dict) ;;
    esac
    # -seed: a fixed mutation sequence, so a CI failure reproduces with the same command (the
    # exploration that looks for new defects is benchmarks/fuzz_long.sh, not CI).
    # -timeout: one input may take at most 10 s (issue 10 wants < 1 s; 10 s leaves room for the
    # sanitizers' slowdown and a loaded machine). -rss_limit_mb: 2 GiB, the bound on memory.
    if ! build/ci-asan/tests/fuzz/$harness "${dict[@]}" -seed=1 -max_total_time="$FUZZ_SECONDS" -timeout=10 \
         -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 -artifact_prefix="build/ci-asan/$harness-" \
         "$out" "tests/fuzz/corpus/$harness" >"build/ci-asan/$harness.log" 2>&1; then
      echo "!! $harness found a defect; reproducer under build/ci-asan/$harness-*; log tail:"
      tail -n 40 "build/ci-asan/$harness.log"
      ok=1
    fi
    echo "   $harness: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "build/ci-asan/$harness.log" |
                         grep -o '[0-9]*$') executions in ${FUZZ_SECONDS} s"
  done
  return $ok
}

total_start=$SECONDS
run_stage clang VLLM_MEM_SKIP_CLANG stage_clang
run_stage sanitizers VLLM_MEM_SKIP_SANITIZERS stage_sanitizers
run_stage fuzz-smoke VLLM_MEM_SKIP_FUZZ stage_fuzz

echo "== C++ checks: stage durations"
for line in "${timings[@]}"; do echo "   $line"; done
echo "   total: $((SECONDS - total_start)) s"
if ((${#failures[@]})); then
  echo "== C++ checks FAILED: ${failures[*]}"
  exit 1
fi
echo "== C++ checks passed"

#!/usr/bin/env bash
# Long libFuzzer runs of the harnesses in tests/fuzz, under AddressSanitizer +
# UndefinedBehaviorSanitizer halting on the first report (docs/fuzzing.md). Prints, per
# harness, the executions run, the corpus size reached and the findings (crash-*, leak-*,
# timeout-*, oom-* reproducers), then a total. Exits 1 when anything was found.
#
#   bash benchmarks/fuzz_long.sh                     # 600 s per harness, 2 jobs
#   SECONDS_PER_HARNESS=3600 JOBS=4 bash benchmarks/fuzz_long.sh fuzz_model_config
#   RUNS=1000000 bash benchmarks/fuzz_long.sh        # a fixed number of executions per job
#
# Environment: SECONDS_PER_HARNESS (default 600), RUNS (per job; overrides the time when set),
# JOBS (parallel fuzzing processes per harness through libFuzzer's -fork, default 2),
# BUILD_DIR (default build/ci-asan, configured here as scripts/ci_cxx_checks.sh does).
# The corpus grows in $BUILD_DIR/fuzz-corpus/<harness>; copy interesting inputs to
# tests/fuzz/corpus/<harness> to keep them as seeds.
set -uo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_HARNESS=${SECONDS_PER_HARNESS:-600}
RUNS=${RUNS:-}
JOBS=${JOBS:-2}
BUILD_DIR=${BUILD_DIR:-build/ci-asan}
if (($#)); then HARNESSES=("$@"); else HARNESSES=(fuzz_json fuzz_gpu_name fuzz_model_config fuzz_stage_config); fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1" \
    -DCMAKE_CXX_COMPILER=clang++ -DVLLM_MEM_BUILD_PYTHON=OFF -DVLLM_MEM_BUILD_FUZZERS=ON \
    -DVLLM_MEM_WARNINGS_AS_ERRORS=ON -DVLLM_MEM_SANITIZE="address;undefined" >/dev/null || exit 1
fi
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${HARNESSES[@]}" || exit 1

total_execs=0
total_findings=0
printf '%-20s %12s %10s %9s %s\n' harness executions corpus findings "reproducers"
for harness in "${HARNESSES[@]}"; do
  corpus=$BUILD_DIR/fuzz-corpus/$harness
  findings_dir=$BUILD_DIR/fuzz-findings/$harness
  mkdir -p "$corpus" "$findings_dir"
  dict=()
  case $harness in
    fuzz_model_config) dict=(-dict=tests/fuzz/config.dict) ;;
    fuzz_stage_config) dict=(-dict=tests/fuzz/stage.dict) ;;
    fuzz_json) dict=(-dict=tests/fuzz/json.dict) ;;
  esac
  # GPU names past 256 bytes all take the same refusal path; shorter inputs keep the fuzzer on
  # the lookup and the fuzzy match instead of on copying 64 KiB per execution.
  max_len=65536
  [[ $harness == fuzz_gpu_name ]] && max_len=4096
  limit=(-max_total_time="$SECONDS_PER_HARNESS")
  [[ -n "$RUNS" ]] && limit=(-runs="$RUNS")
  log=$findings_dir/fuzz.log
  # -fork: JOBS child processes, each restarted after a finding (-ignore_crashes=1), so one run
  # collects every distinct finding instead of stopping at the first. -timeout 10 s per input and
  # -rss_limit_mb 2048 make slowness and memory growth findings too.
  "$BUILD_DIR/tests/fuzz/$harness" "${dict[@]}" "${limit[@]}" -fork="$JOBS" -ignore_crashes=1 \
    -ignore_timeouts=1 -ignore_ooms=1 -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
    -artifact_prefix="$findings_dir/" "$corpus" "tests/fuzz/corpus/$harness" >"$log" 2>&1
  # -fork prints cumulative "#N ... exec/s" lines; the last one has the total.
  execs=$(grep -o '^#[0-9]*' "$log" | tail -n 1 | tr -d '#')
  execs=${execs:-0}
  files=$(find "$corpus" -type f | wc -l)
  reproducers=$(find "$findings_dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
                -o -name 'oom-*' -o -name 'slow-unit-*' \) | sort)
  n=0
  [[ -n "$reproducers" ]] && n=$(wc -l <<<"$reproducers")
  printf '%-20s %12s %10s %9s %s\n' "$harness" "$execs" "$files" "$n" "$(tr '\n' ' ' <<<"$reproducers")"
  total_execs=$((total_execs + execs))
  total_findings=$((total_findings + n))
done
echo "total: $total_execs executions, $total_findings findings (logs: $BUILD_DIR/fuzz-findings/*/fuzz.log)"
((total_findings == 0))

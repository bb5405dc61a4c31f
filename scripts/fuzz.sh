#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) in build-fuzz/ with clang-22 and runs
# each for a bounded time on its seed corpus (fuzz/make_corpus.py), niced.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]    # default: 60 s each, all targets
#
# Targets: safetensors gguf npy profile manifest config mlir passes (passes
# starts from the mlir seeds and runs the passes before code generation, no
# JIT). New inputs that increase coverage go to build-fuzz/fuzz/work/<target>/;
# crashers to build-fuzz/fuzz/crashes/<target>/ (reproduce with
# build-fuzz/bin/rlx-fuzz-<target> <file>). Prints executions and crashes per
# target; exits 1 if any target crashed.
#
# Environment: RLX_FUZZ_BUILD_DIR (build-fuzz), RLX_FUZZ_JOBS (ninja -j, 2),
# RLX_FUZZ_NICE (10), RLX_FUZZ_MLIR=0 to skip the (slow to build) mlir and
# passes targets.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
ALL=(safetensors gguf npy profile manifest config mlir passes)
[ "${RLX_FUZZ_MLIR:-1}" = 0 ] && ALL=(safetensors gguf npy profile manifest config)
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")
BUILD=${RLX_FUZZ_BUILD_DIR:-build-fuzz}
NICE="nice -n ${RLX_FUZZ_NICE:-10}"

for tool in clang-22 clang++-22; do
  command -v $tool >/dev/null || { echo "fuzz: $tool missing (scripts/setup.sh installs it)"; exit 2; }
done
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_C_FLAGS_RELEASE=-O1 -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
    -DRLX_ENABLE_FUZZERS=ON -DRLX_ENABLE_SPIRV=OFF \
    -DRLX_FUZZ_MLIR="${RLX_FUZZ_MLIR:-1}" >/dev/null
fi
$NICE cmake --build "$BUILD" -j"${RLX_FUZZ_JOBS:-2}" \
  --target rlx-fuzz-corpus "${TARGETS[@]/#/rlx-fuzz-}"

CORPUS=$BUILD/fuzz/corpus
WORK=$BUILD/fuzz/work
CRASHES=$BUILD/fuzz/crashes
LOGS=$BUILD/fuzz/logs
mkdir -p "$WORK" "$CRASHES" "$LOGS"
# Leaks are reported (LeakSanitizer) and fail the run like crashes.
# allow_user_poisoning=0: see scripts/test-sanitizers.sh (BumpPtrAllocator
# slabs shared with the uninstrumented libMLIR.so).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export RLX_MEMORY_BUDGET_MB=${RLX_MEMORY_BUDGET_MB:-256}

declare -A MAXLEN=([safetensors]=65536 [gguf]=65536 [npy]=4096 [profile]=4096
                   [manifest]=8192 [config]=8192 [mlir]=8192 [passes]=8192)
# The seed corpus of each target, when not its own name.
declare -A SEEDS=([passes]=mlir)
status=0
printf "%-12s %10s %8s %8s %s\n" target execs "exec/s" crashes coverage
for t in "${TARGETS[@]}"; do
  bin=$BUILD/bin/rlx-fuzz-$t
  mkdir -p "$WORK/$t" "$CRASHES/$t"
  log=$LOGS/$t.log
  set +e
  $NICE "$bin" "$WORK/$t" "$CORPUS/${SEEDS[$t]:-$t}" \
    -max_total_time="$SECONDS_EACH" -max_len="${MAXLEN[$t]}" \
    -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$CRASHES/$t/" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  found=$(find "$CRASHES/$t" -type f | wc -l)
  printf "%-12s %10s %8s %8s %s\n" "$t" "${execs:-?}" "${speed:-?}" "$found" "${cov:-?}"
  if [ $rc -ne 0 ] || [ "$found" -gt 0 ]; then
    status=1
    echo "  $t: exit $rc; log $log; crashers in $CRASHES/$t/"
    grep -m3 -E 'ERROR: |runtime error|SUMMARY' "$log" | sed 's/^/    /' || true
  fi
done
exit $status

#!/usr/bin/env bash
# Builds RLX with AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer)
# in build-asan/ (clang-22, RLX_ENABLE_SANITIZERS=ON) and runs tests there.
#
#   scripts/test-sanitizers.sh [quick|full]
#
# quick (default; what scripts/test.sh runs): the libraries that read files
# from outside and need no MLIR (RLXWeights, RLXProfile, RLXRuntime), their
# GoogleTests, and every fuzz target's seed corpus and former crashers
# replayed through it (fuzz/, without libFuzzer), except the .mlir one.
#
# full: everything: all GoogleTests, the lit suite (rlx-opt, rlx-run,
# rlx-exec under the sanitizers), all corpus replays including .mlir, and the
# bad-input catalogue (test/Integration/test_bad_inputs.py). The other
# pytest files are left out (they compare numerics against torch for
# minutes, and exercise the same code paths as lit).
#
# MLIR and LLVM come from Debian's libMLIR.so / libLLVM.so and are not
# instrumented: errors inside them are seen only where RLX code touches the
# memory. Leak reports from inside them are suppressed
# (scripts/sanitizers/lsan.supp says which and why).
#
# Environment: RLX_ASAN_BUILD_DIR (build-asan), RLX_ASAN_JOBS (ninja -j).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-quick}
BUILD=${RLX_ASAN_BUILD_DIR:-build-asan}
ROOT=$(pwd)
case "$MODE" in quick|full) ;; *) echo "usage: $0 [quick|full]"; exit 2 ;; esac

for tool in clang-22 clang++-22; do
  command -v $tool >/dev/null || {
    echo "test-sanitizers: $tool missing (scripts/setup.sh installs it)"; exit 2; }
done
start=$(date +%s)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DCMAKE_C_FLAGS_RELEASE=-O1 -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
  -DRLX_ENABLE_SANITIZERS=ON -DRLX_ENABLE_PYTHON_BINDINGS=OFF -DRLX_FUZZ_MLIR=$([ "$MODE" = full ] && echo ON || echo OFF) \
  >/dev/null
JOBS=()
[ -n "${RLX_ASAN_JOBS:-}" ] && JOBS=(-j"$RLX_ASAN_JOBS")
if [ "$MODE" = quick ]; then
  cmake --build "$BUILD" "${JOBS[@]}" --target \
    RLXWeightsTests RLXProfileTests RLXRuntimeTests rlx-exec \
    rlx-fuzz-safetensors rlx-fuzz-gguf rlx-fuzz-npy rlx-fuzz-profile \
    rlx-fuzz-manifest rlx-fuzz-config
else
  cmake --build "$BUILD" "${JOBS[@]}"
fi
built=$(date +%s)

# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons the unused part of
# its slabs when compiled with ASan (our code) but not in libMLIR.so, which
# allocates from the same slabs (the MLIR context's uniquers): without this,
# MLIR's own allocations read as use-after-poison. fast_unwind_on_malloc=0:
# allocation stacks that pass through libraries without frame pointers (the
# Vulkan driver) reach our code, so lsan.supp can name where they came from.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1:allow_user_poisoning=0:print_summary=1:fast_unwind_on_malloc=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:report_error_type=1"
export LSAN_OPTIONS="suppressions=$ROOT/scripts/sanitizers/lsan.supp:print_suppressions=0"
# An arena or KV cache the tests ask for past this is refused, not allocated.
export RLX_MEMORY_BUDGET_MB=${RLX_MEMORY_BUDGET_MB:-4096}

status=0
if [ "$MODE" = quick ]; then
  for t in Weights Profile Runtime; do
    "$BUILD/unittests/$t/RLX${t}Tests" --gtest_brief=1 || status=1
  done
  ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" -L fuzz-corpus \
    || status=$?
else
  # The catalogue drives the tools of this build.
  RLX_BUILD_DIR="$ROOT/$BUILD" "$ROOT/.venv/bin/python" -m pytest -q \
    -p no:cacheprovider test/Integration/test_bad_inputs.py || status=$?
  ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" \
    -E 'pytest-integration|clang-format' || status=$?
fi
end=$(date +%s)
echo "test-sanitizers ($MODE): build $((built - start)) s, tests $((end - built)) s"
exit $status

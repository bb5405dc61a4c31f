#!/usr/bin/env bash
# Set up (apt + .venv), configure, build and run every test: lit, GoogleTest,
# pytest and the clang-format check, all through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${RLX_BUILD_DIR:-build}
# Lavapipe is installed by setup.sh: the Vulkan tests must run, not skip.
export RLX_REQUIRE_VULKAN=${RLX_REQUIRE_VULKAN:-1}
# lavapipe wants a private runtime dir.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
chmod 700 "$XDG_RUNTIME_DIR" 2>/dev/null || true
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)"
# The file readers and the runtime again under ASan + UBSan + LSan, with the
# fuzz seed corpora replayed (scripts/test-sanitizers.sh quick: its own
# build-asan/, a few minutes). RLX_SANITIZERS=0 skips it; so does a machine
# without clang-22 (setup.sh installs it).
if [ "${RLX_SANITIZERS:-1}" = 0 ]; then
  echo "test.sh: sanitizer run skipped (RLX_SANITIZERS=0)"
elif ! command -v clang++-22 >/dev/null; then
  echo "test.sh: sanitizer run skipped (no clang++-22)"
else
  bash scripts/test-sanitizers.sh quick
fi

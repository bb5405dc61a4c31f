#!/usr/bin/env bash
# Set up (apt + .venv), configure, build and run every test: lit, GoogleTest,
# pytest and the clang-format check, all through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${RLX_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)"

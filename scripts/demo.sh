#!/usr/bin/env bash
# The main job: set up, build, and run RLX on a bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
BUILD=${RLX_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target rlx-opt >/dev/null
echo "== RLX dialects"
"$BUILD/bin/rlx-opt" --show-dialects
echo "== examples/three-levels.mlir (parsed, verified and printed by rlx-opt)"
"$BUILD/bin/rlx-opt" examples/three-levels.mlir

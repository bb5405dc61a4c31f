#!/usr/bin/env bash
# Builds a project against an installed RLX, the way a user would:
#   1. `cmake --install <build> --prefix <work>/prefix` (a fresh prefix);
#   2. configures and builds examples/standalone-cpp with
#      -DCMAKE_PREFIX_PATH=<work>/prefix, with the build's generator, C++
#      compiler and compiler launcher (ccache);
#   3. runs tiny-flow (RLX::Flow: flow API, JIT, checked against naive loops,
#      then AOT to a library) and tiny-exec (RLX::Runtime only: runs that
#      library);
#   4. builds examples/cpp against the prefix too and runs each program on a
#      tiny model (scripts/make_tiny_models.py, with the project's Python):
#      its output must be the tree-built program's, line for line.
# Usage: scripts/test-install.sh <build-dir> [<work-dir>] [-- <cmake args>...]
# <work-dir> defaults to <build-dir>/test-install (wiped first; a fixed path
# lets ccache hit on reruns). ctest runs this as `install-standalone`.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 <build-dir> [<work-dir>] [-- <cmake args>...]" >&2; exit 2; }
build=$(cd "$1" && pwd)
shift
work=$build/test-install
if [ $# -ge 1 ] && [ "$1" != "--" ]; then
  work=$1
  shift
fi
[ $# -ge 1 ] && [ "$1" = "--" ] && shift
CMAKE=${CMAKE:-cmake}

cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n 1; }
generator=$(cache CMAKE_GENERATOR)
cxx=$(cache CMAKE_CXX_COMPILER)
launcher=$(cache CMAKE_CXX_COMPILER_LAUNCHER)
[ -n "$launcher" ] || launcher=$(cache RLX_CCACHE)
case $launcher in *NOTFOUND) launcher= ;; esac

rm -rf "$work"
mkdir -p "$work"
SECONDS=0
"$CMAKE" --install "$build" --prefix "$work/prefix" > "$work/install.log"
echo "installed $build into $work/prefix ($SECONDS s)"

# configure_against_prefix <source> <binary> <log> [<cmake args>...]
configure_against_prefix() {
  local source=$1 binary=$2 log=$3
  shift 3
  local args=(-S "$source" -B "$binary" -DCMAKE_PREFIX_PATH="$work/prefix"
              -DCMAKE_CXX_COMPILER="$cxx")
  [ -n "$generator" ] && args+=(-G "$generator")
  [ -n "$launcher" ] && args+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")
  "$CMAKE" "${args[@]}" "$@" > "$log" || { cat "$log"; exit 1; }
  grep "Using RLX" "$log"
}

configure_against_prefix "$src/examples/standalone-cpp" "$work/build" \
  "$work/configure.log" "$@"
"$CMAKE" --build "$work/build"
echo "configured and built examples/standalone-cpp ($SECONDS s)"

"$work/build/tiny-flow" "$work/aot/tiny"
"$work/build/tiny-exec" "$work/aot/tiny"

configure_against_prefix "$src/examples/cpp" "$work/examples" \
  "$work/configure-examples.log" "$@"
"$CMAKE" --build "$work/examples"
echo "configured and built examples/cpp against the prefix ($SECONDS s)"

python=${RLX_PYTHON:-$src/.venv/bin/python}
[ -x "$python" ] || { echo "test-install: no Python at $python (scripts/setup.sh makes .venv) to make the examples' tiny models" >&2; exit 1; }
"$python" "$src/scripts/make_tiny_models.py" "$work/models" --kind llama --tied > /dev/null
"$python" "$src/scripts/make_tiny_models.py" "$work/models" --kind bert > /dev/null
for example in "llama-generate $work/models/llama 5,17,42,9 6" \
               "custom-flow $work/models/llama 5,17,42,9" \
               "custom-layers $work/models/llama 5,17,42,9" \
               "sentence-embeddings $work/models/bert 5,17,42,9"; do
  set -- $example
  name=$1
  shift
  tree=$build/examples/bin/rlx-example-$name
  [ -x "$tree" ] || { echo "test-install: $tree is not built" >&2; exit 1; }
  "$work/examples/bin/rlx-example-$name" "$@" > "$work/$name.installed.txt"
  "$tree" "$@" > "$work/$name.tree.txt"
  [ -s "$work/$name.installed.txt" ] ||
    { echo "test-install: rlx-example-$name printed nothing" >&2; exit 1; }
  diff -u "$work/$name.tree.txt" "$work/$name.installed.txt" ||
    { echo "test-install: rlx-example-$name differs when built against the prefix" >&2; exit 1; }
  echo "rlx-example-$name: same output built against the prefix"
done
echo "install-standalone: OK ($SECONDS s)"

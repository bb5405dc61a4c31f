#!/usr/bin/env bash
# Builds a project against an installed RLX, the way a user would:
#   1. `cmake --install <build> --prefix <work>/prefix` (a fresh prefix);
#   2. configures and builds examples/standalone-cpp with
#      -DCMAKE_PREFIX_PATH=<work>/prefix, with the build's generator, C++
#      compiler and compiler launcher (ccache);
#   3. runs tiny-flow (RLX::Flow: flow API, JIT, checked against naive loops,
#      then AOT to a library) and tiny-exec (RLX::Runtime only: runs that
#      library).
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

args=(-S "$src/examples/standalone-cpp" -B "$work/build"
      -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_COMPILER="$cxx")
[ -n "$generator" ] && args+=(-G "$generator")
[ -n "$launcher" ] && args+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")
"$CMAKE" "${args[@]}" "$@" > "$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
grep "Using RLX" "$work/configure.log"
"$CMAKE" --build "$work/build"
echo "configured and built examples/standalone-cpp ($SECONDS s)"

"$work/build/tiny-flow" "$work/aot/tiny"
"$work/build/tiny-exec" "$work/aot/tiny"
echo "install-standalone: OK ($SECONDS s)"

#!/usr/bin/env bash
# Fails if any C++ source differs from clang-format (LLVM style).
set -euo pipefail
cd "$(dirname "$0")/.."
CF=${CLANG_FORMAT:-$(command -v clang-format-22 || command -v clang-format)}
files=$(git ls-files '*.cpp' '*.h' 2>/dev/null || find include lib tools unittests -name '*.cpp' -o -name '*.h')
[ -n "$files" ] || exit 0
"$CF" --dry-run --Werror $files
echo "clang-format: $(echo "$files" | wc -l) files clean"

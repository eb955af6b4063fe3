#!/usr/bin/env bash
# Formats every C++ source with .clang-format (Google base, 100 columns). With --check, changes
# nothing and exits 1 when a file is not formatted (string literals and ASCII diagrams may stay
# longer than the limit: clang-format does not break them).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h')
if [ "${1:-}" = "--check" ]; then
  clang-format --style=file --dry-run --Werror "${files[@]}"
else
  clang-format --style=file -i "${files[@]}"
fi

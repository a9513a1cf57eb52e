#!/usr/bin/env bash
# Formats every C++ file in place with clang-format (.clang-format at the
# root): the files scripts/lint.sh format checks.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z '*.cc' '*.h' | xargs -0 clang-format -i

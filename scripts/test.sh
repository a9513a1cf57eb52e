#!/usr/bin/env bash
# The whole test suite: installs build dependencies, builds, runs every
# test through ctest, then builds the libFuzzer targets with clang and runs
# each for a bounded time (FUZZ_SECONDS, default 30).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 300 -j2

CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DHPCB_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
ninja -C build-fuzz
seconds="${FUZZ_SECONDS:-30}"
for fuzzer in decode text; do
  work=$(mktemp -d)
  echo "fuzzing ${fuzzer} decoders for ${seconds}s"
  "build-fuzz/fuzz/${fuzzer}_fuzzer" -max_total_time="$seconds" -max_len=8192 \
      -print_final_stats=1 "$work" "fuzz/corpus/${fuzzer}" 2>&1 | tail -n 4
  rm -rf "$work"
done
echo "fuzzers: no crash"

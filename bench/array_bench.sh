#!/usr/bin/env bash
# Job arrays at scale. The targets: a 10,000-element array is submitted in
# one request in under 1 s, and `list` of it takes under 100 ms. A
# user-mode daemon on scratch paths, one `dispatch new --array 1-N` whose
# elements wait on a sleeping job (so what is timed is the submission and
# the queue, not 10,000 runs), then `list` (folded, one row) and
# `list --long` (a row per element), then a restart with the array queued, checked to lose nothing.
# Each time is the command's own wall time, best of BENCH_ARRAY_TRIES (3).
#
#   bench/array_bench.sh [BUILD_DIR]     # BENCH_ARRAY_N elements (10000)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
n=${BENCH_ARRAY_N:-10000}
tries=${BENCH_ARRAY_TRIES:-3}
bin=$(cd "$build/bin" && pwd)
scratch=$(mktemp -d "${BENCH_TMP:-/tmp}/hpc-batch-array-bench.XXXXXX")
chmod 0755 "$scratch"
# As root, everything runs as nobody (user mode), as bench/run.sh does.
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  chown nobody:nogroup "$scratch"
  as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi
daemon=""
sleeper=""
cleanup() {
  # Jobs outlive the daemon: the sleeping one is killed first.
  [ -n "$sleeper" ] && dispatch kill "$sleeper" >/dev/null 2>&1
  [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT
export HPC_BATCH_SOCKET=$scratch/sock
start() {
  "${as_user[@]}" "$bin/hpc-batchd" --no-cgroups --socket "$scratch/sock" --state-dir "$scratch/state" \
    --dev-dir "$scratch/dev" --max-lifetime 1h --reserve-cpu 0 --max-queued-per-user $((n * 4)) \
    --log-level warning 2>>"$scratch/log" &
  daemon=$!
  for _ in $(seq 100); do dispatch list >/dev/null 2>&1 && return; sleep 0.1; done
  cat "$scratch/log"; echo "the daemon did not start" >&2; exit 1
}
dispatch() { "${as_user[@]}" "$bin/dispatch" "$@"; }
# best MS CMD...: the fastest of $tries runs of CMD, in ms (the output of
# the last run in $scratch/out).
best() {
  local fastest="" start end ms
  for _ in $(seq "$tries"); do
    start=$EPOCHREALTIME
    "$@" >"$scratch/out"
    end=$EPOCHREALTIME
    ms=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", (b - a) * 1000 }')
    if [ -z "$fastest" ] || awk -v a="$ms" -v b="$fastest" 'BEGIN { exit !(a < b) }'; then
      fastest=$ms
    fi
  done
  echo "$fastest"
}
start
cd "$scratch"
sleeper=$(dispatch new --no-output -- sleep 3600 | sed -n 's/^job \([0-9]*\) .*/\1/p')
# Each try submits an array of its own; every one stays queued.
submit_ms=$(best dispatch new --no-output --array "1-$n" --after "$sleeper" -- true)
array=$(sed -n 's/^array \([0-9]*\) .*/\1/p' "$scratch/out")
list_ms=$(best dispatch list)
rows=$(grep -c "_\[1-$n\]" "$scratch/out" || true)
long_ms=$(best dispatch list --long)
kill -TERM "$daemon"; wait "$daemon" || true
start
queued=$(dispatch list --long | grep -c "^[^ ]* *${array}_")
echo "array of $n elements: submit ${submit_ms} ms (target < 1000), list ${list_ms} ms" \
  "($rows folded rows; target < 100), list --long ${long_ms} ms; after a restart" \
  "$queued of $n elements of array $array still queued"
[ "$queued" -eq "$n" ] || { echo "the restart lost elements" >&2; exit 1; }

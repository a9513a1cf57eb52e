#!/usr/bin/env bash
# The whole test suite: installs build dependencies, builds, checks format,
# runs every test through ctest while clang-tidy and the sanitizer build run
# beside it at idle priority, checks the root side's line budget
# (scripts/root-size.sh), the real-kernel checks in a qemu guest
# (scripts/vm-test.sh), then the unit and end-to-end tests again under ASan
# and UBSan with the Slurm backend's check (scripts/slurm-test.sh) and each
# libFuzzer target beside them, the fuzzers for a bounded time
# (FUZZ_SECONDS, default 15).
#
#   scripts/test.sh          the whole suite (CI runs this)
#   scripts/test.sh --fast   build, format, clang-tidy on the sources changed
#                            since main's merge base, and the unit and e2e
#                            tiers (ctest -L 'unit|e2e')
#
# ctest labels name the tiers: unit, e2e, root, hostile, fault, scale, lint
# (the root-size budget) and package (the install tree and the .deb);
# ctest -L LABEL runs one. The vm, slurm, sanitizer and fuzz tiers are the
# steps below.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
at() { echo "test.sh: $* at $((SECONDS - start)) s"; }  # where the time went
scripts/install-deps.sh
# What the Slurm check and the qemu guest fetch from the archive (Slurm's
# packages, qemu, a kernel) comes while the build runs: it is network and
# disk, the build is CPU. Best effort: each step checks again for itself.
fetch_log=$(mktemp)
if [ "${1:-}" != --fast ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  setsid -w bash -c 'scripts/slurm-test.sh --install-only && tests/vm/setup.sh' >"$fetch_log" 2>&1 &
  fetch_pid=$!
  trap 'kill -- "-$fetch_pid" 2>/dev/null || true; rm -f "$fetch_log"' EXIT
fi
scripts/build.sh
at "built"
if [ -n "${fetch_pid:-}" ]; then
  if ! wait "$fetch_pid"; then
    tail -n 20 "$fetch_log"
    echo "test.sh: fetching Slurm's packages or the guest's parts failed; their steps try again"
  fi
  at "fetched"
fi
rm -f "$fetch_log"
if [ "${1:-}" = --fast ]; then
  scripts/lint.sh format
  scripts/lint.sh tidy-changed
  ctest --test-dir build --output-on-failure --timeout 300 -j2 -L 'unit|e2e'
  echo "test.sh --fast: ok in $((SECONDS - start)) s"
  exit 0
fi
scripts/lint.sh format
at "format checked"

# clang-tidy and the sanitizer build need only CPU, and the test tiers
# leave much of it unused: most of their time is spent waiting on daemons,
# kills and restarts. So both run beside the tests at idle priority
# (SCHED_IDLE, and the idle I/O class where the disk's scheduler has one),
# each in a session of its own with its own log, and take only what the
# tests leave. Both are waited for before the qemu guest.
side_logs=$(mktemp -d)
side_jobs=()
stop_side_jobs() {  # on exit: stops what still runs, shows its log on a failure
  local rc=$? pid log
  for pid in "${side_jobs[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  signal_side_jobs CONT  # a stopped one gets its TERM only once resumed
  if ((rc != 0)); then
    for log in "$side_logs"/*.log; do
      [ -f "$log" ] && { echo "--- $(basename "$log" .log), stopped:"; tail -n 40 "$log"; }
    done
  fi
  rm -rf "$side_logs"
}
trap stop_side_jobs EXIT
in_session() {  # NAME COMMAND...: runs COMMAND in the background, in a session of its own
  local name=$1
  shift
  setsid -w "$@" >"$side_logs/$name.log" 2>&1 &
  side_jobs+=($!)
}
beside_tests() {  # NAME COMMAND...: the same at idle priority
  local name=$1
  shift
  in_session "$name" chrt --idle 0 ionice -c 3 "$@"
}
signal_side_jobs() {  # STOP|CONT: pauses or resumes every side job, whole
  # By session, not process group: ninja starts each compiler in a group
  # of its own.
  local pid
  for pid in "${side_jobs[@]}"; do pkill -"$1" -s "$pid" 2>/dev/null || true; done
}
wait_beside() {  # NAME PID: its log, and its failure is the suite's
  local rc=0
  wait "$2" || rc=$?
  at "$1 ended"
  cat "$side_logs/$1.log"
  rm -f "$side_logs/$1.log"
  if ((rc != 0)); then
    echo "test.sh: $1 FAILED (exit $rc)" >&2
    exit "$rc"
  fi
}

# The sanitizer build (clang, ASan + UBSan, any finding aborts): the unit
# tests and the user-mode end-to-end suite run again there, then each
# libFuzzer target for FUZZ_SECONDS. The root, fault and hostile suites are
# left to the main build (and are not built there): their deadlines are set
# for uninstrumented code, and their seccomp checks for the filters that
# kill (see common/host/unlisted_call_action.h).
# Its tree (1.1 GB) is kept in memory where /dev/shm allows: on ext4 an
# fsync waits for every other file's dirty data, so the build's writes
# made the daemons' durable acknowledgments take seconds beside it (a
# hostile test's `new` went 5 s unanswered), where SCHED_IDLE keeps only
# its CPU use out of the way. build-fuzz is then a link to that directory.
if [ ! -d build-fuzz ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
  ln -sfn "$(mktemp -d /dev/shm/hpcb-build-fuzz.XXXXXX)" build-fuzz
fi
CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DHPCB_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only >/dev/null
beside_tests tidy env LINT_JOBS=2 scripts/lint.sh tidy  # clang-tidy (.clang-tidy)
tidy_pid=$!
beside_tests sanitizer-build ninja -j2 -C build-fuzz
sanitizer_build_pid=$!

# The scale tier writes and reads 200k job files (in /dev/shm where it
# can: on a disk mounted with `discard` their removal alone took minutes);
# it has no bound on time but its start-up timeout, so the side jobs run
# beside it. The hostile tier times other users' calls against bounds of a
# second while it attacks, so the side jobs are stopped (SIGSTOP) while it
# runs: with clang-tidy beside it, even at idle priority, a victim's `new`
# went 5 s unanswered.
ctest --test-dir build --output-on-failure --timeout 300 -j2 -L scale
at "scale tier passed"
signal_side_jobs STOP
ctest --test-dir build --output-on-failure --timeout 300 -j2 -L hostile
signal_side_jobs CONT
at "hostile tier passed"

ctest --test-dir build --output-on-failure --timeout 300 -j2 -LE 'scale|hostile'
at "other ctest tiers passed"
# After the tests, so that an overrun does not hide their results.
scripts/root-size.sh build  # the root side's code lines against scripts/root-budget
wait_beside tidy "$tidy_pid"
wait_beside sanitizer-build "$sanitizer_build_pid"

# Real-kernel checks (cgroup v2 limits, NUMA placement, systemd unit) in a
# qemu guest, ~3 min under TCG, bounded by VM_TIMEOUT (600 s). As root with
# apt (CI) qemu and the kernel can be had, so not getting them is a failure.
# It runs alone: with clang-tidy beside it, even at idle priority, it took
# 226 s instead of 193.
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then export VM_REQUIRED=${VM_REQUIRED:-1}; fi
scripts/vm-test.sh
at "qemu guest passed"

# The unit and e2e tiers again in the sanitizer build. Beside them: the
# Slurm check (dispatch's Slurm backend against a one-node cluster it
# starts; skips unless root with apt), at normal priority since its steps
# have timeouts, and the three fuzzers at idle priority, each for
# FUZZ_SECONDS of wall time on what the tests (mostly waiting on daemons)
# leave of the CPU.
in_session slurm scripts/slurm-test.sh
slurm_pid=$!
seconds="${FUZZ_SECONDS:-15}"
fuzz_dir=$(mktemp -d)
fuzzers=(decode text state)
fuzz_pids=()
for fuzzer in "${fuzzers[@]}"; do
  mkdir "$fuzz_dir/$fuzzer"
  beside_tests "fuzz-$fuzzer" "build-fuzz/fuzz/${fuzzer}_fuzzer" -max_total_time="$seconds" \
      -max_len=8192 -print_final_stats=1 "$fuzz_dir/$fuzzer" "fuzz/corpus/${fuzzer}"
  fuzz_pids+=($!)
done
ctest --test-dir build-fuzz --output-on-failure --timeout 300 -j2 -L 'unit|e2e' -E slurm
at "sanitizer tiers passed"
fuzz_failed=0
for i in "${!fuzzers[@]}"; do
  fuzzer=${fuzzers[$i]}
  rc=0
  wait "${fuzz_pids[$i]}" || rc=$?
  echo "fuzzing ${fuzzer} decoders for ${seconds}s: exit ${rc}"
  log="$side_logs/fuzz-$fuzzer.log"
  if ((rc != 0)); then tail -n 60 "$log"; fuzz_failed=1; else tail -n 4 "$log"; fi
  rm -f "$log"
done
rm -rf "$fuzz_dir"
((fuzz_failed == 0)) || { echo "test.sh: a fuzzer crashed" >&2; exit 1; }
echo "fuzzers: no crash"
wait_beside slurm "$slurm_pid"
side_jobs=()
echo "test.sh: ok in $((SECONDS - start)) s"

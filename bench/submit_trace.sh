#!/usr/bin/env bash
# Where one client's submit time goes, from a trace: BENCH_N sequential
# submissions (200) to hpc-batch and then to task-spooler, 50 ms apart so
# that each job has ended before the next submission, recorded system-wide
# with perf's scheduler and fsync/fdatasync tracepoints. For each
# submission it takes the client process's life (exec to exit: no shell
# fork or setpriv in it) and the part of that life in which a daemon role
# sat in a durability flush, by role. task-spooler flushes nothing, so the
# gap between the two medians splits into the flushes and the rest.
#
#   bench/submit_trace.sh                 # root and perf; builds first
#   BENCH_PREFIX=DIR bench/submit_trace.sh  # an installed tree instead
#   BENCH_TMP=/dev/shm bench/submit_trace.sh  # state on tmpfs
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "submit_trace.sh: needs root (perf's tracepoints)" >&2; exit 1; }
command -v perf >/dev/null || { echo "submit_trace.sh: needs perf (linux-perf)" >&2; exit 1; }
command -v tsp >/dev/null || { echo "submit_trace.sh: needs tsp (task-spooler)" >&2; exit 1; }
if [ -z "${BENCH_PREFIX:-}" ]; then
  scripts/install-deps.sh
  scripts/build.sh >/dev/null
fi
N=${BENCH_N:-200}
scratch=$(mktemp -d "${BENCH_TMP:-/tmp}/hpc-batch-trace.XXXXXX")
chmod 0755 "$scratch"
if [ -n "${BENCH_PREFIX:-}" ]; then
  cp -a "$BENCH_PREFIX" "$scratch/prefix"
else
  cmake --install build --prefix "$scratch/prefix" >/dev/null
fi
mkdir -p "$scratch/ours/work" "$scratch/ts/work"
chown -R nobody:nogroup "$scratch"
as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null
  TS_SOCKET=$scratch/ts/sock "${as_user[@]}" tsp -K >/dev/null 2>&1 || true
  sleep 0.5
  rm -rf "$scratch"
}
trap cleanup EXIT

"${as_user[@]}" "$scratch/prefix/sbin/hpc-batchd" --no-cgroups --socket "$scratch/ours/sock" \
  --state-dir "$scratch/ours/state" --dev-dir "$scratch/ours/dev" --max-lifetime 1h \
  --reserve-cpu 0 --keep-finished $((N + 10)) --log-level warning 2>"$scratch/ours/log" &
daemon=$!
for _ in $(seq 100); do [ -S "$scratch/ours/sock" ] && break; sleep 0.1; done
[ -S "$scratch/ours/sock" ] || { cat "$scratch/ours/log"; echo "the daemon did not start" >&2; exit 1; }
(cd "$scratch/ts/work" && TS_SOCKET=$scratch/ts/sock TMPDIR=$scratch/ts "${as_user[@]}" \
  tsp -S "$(nproc)" >/dev/null)

cat > "$scratch/loop.sh" <<'EOF'
#!/usr/bin/env bash
cd "$1/ours/work" && for ((i = 0; i < $2; i++)); do
  HPC_BATCH_SOCKET=$1/ours/sock "$1/prefix/bin/dispatch" new --no-output -- true >/dev/null
  sleep 0.05
done
cd "$1/ts/work" && for ((i = 0; i < $2; i++)); do
  TS_SOCKET=$1/ts/sock TMPDIR=$1/ts tsp -n true >/dev/null
  sleep 0.05
done
EOF
chmod 0755 "$scratch/loop.sh"
events=sched:sched_process_exec,sched:sched_process_exit,sched:sched_switch
for call in fsync fdatasync; do events+=,syscalls:sys_enter_$call,syscalls:sys_exit_$call; done
perf record -a -q -o "$scratch/perf.data" -e "$events" -- \
  "${as_user[@]}" "$scratch/loop.sh" "$scratch" "$N" >/dev/null 2>&1

# One line per submission, in microseconds: system, its life, the part of it
# in which a role sat in a flush (any, the executor, the broker), then the
# cpu time in it of the client, broker, executor, launcher, the job and its
# shepherd, and anything else (other processes; the kernel's idle excluded).
perf script -i "$scratch/perf.data" -F comm,tid,cpu,time,event,trace 2>/dev/null | awk '
  function group(comm) {
    if (comm == "dispatch" || comm == "tsp") return 1
    if (comm ~ /^hpc-batch-broke/) return 2
    if (comm ~ /^hpc-batch-execu/) return 3
    if (comm == "hpc-batchd") return 4
    if (comm == "hpcb-shepherd" || comm == "true") return 5
    if (comm ~ /^swapper/) return 0
    return 6
  }
  { t = $4; sub(/:$/, "", t); t *= 1e6; event = $5 }
  event ~ /sched_switch/ {
    cpu = $3; prev = $6; sub(/^prev_comm=/, "", prev)
    if (cpu in since) { k++; ca[k] = since[cpu]; cb[k] = t; cg[k] = group(prev) }
    since[cpu] = t
  }
  event ~ /sched_process_exec/ && ($1 == "dispatch" || $1 == "tsp") { born[$2] = t; sys[$2] = $1 }
  event ~ /sched_process_exit/ && ($2 in born) {
    n++; from[n] = born[$2]; to[n] = t; name[n] = sys[$2]; delete born[$2]
  }
  event ~ /sys_enter_f(data)?sync/ { entered[$2] = t }
  event ~ /sys_exit_f(data)?sync/ && ($2 in entered) {
    m++; fa[m] = entered[$2]; fb[m] = t; role[m] = group($1); delete entered[$2]
  }
  END {
    for (i = 1; i <= n; i++) {
      all = 0; ex = 0; br = 0
      for (j = 1; j <= m; j++) {
        a = fa[j] > from[i] ? fa[j] : from[i]; b = fb[j] < to[i] ? fb[j] : to[i]
        if (b <= a) continue
        all += b - a
        if (role[j] == 3) ex += b - a; else if (role[j] == 2) br += b - a
      }
      for (g = 0; g <= 6; g++) used[g] = 0
      for (j = 1; j <= k; j++) {
        if (cb[j] <= from[i] || ca[j] >= to[i]) continue
        a = ca[j] > from[i] ? ca[j] : from[i]; b = cb[j] < to[i] ? cb[j] : to[i]
        used[cg[j]] += b - a
      }
      printf "%s %d %d %d %d %d %d %d %d %d %d\n", name[i], to[i] - from[i], all, ex, br,
        used[1], used[2], used[3], used[4], used[5], used[6]
    }
  }' > "$scratch/lives"

median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) {print 0; exit} print a[int((NR+1)/2)]}'; }
col() { awk -v s="$1" -v c="$2" '$1 == s {print $c}' "$scratch/lives" | median; }
ours_life=$(col dispatch 2); ts_life=$(col tsp 2)
ours_flush=$(col dispatch 3)
rest=$(awk '$1 == "dispatch" {print $2 - $3}' "$scratch/lives" | median)
echo "submissions traced: hpc-batch $(grep -c '^dispatch ' "$scratch/lives"), task-spooler $(grep -c '^tsp ' "$scratch/lives") (state in ${BENCH_TMP:-/tmp})"
echo "client life p50 (exec to exit, us): hpc-batch $ours_life, task-spooler $ts_life, gap $((ours_life - ts_life))"
echo "hpc-batch, p50 (us): flushes during the wait $ours_flush (executor $(col dispatch 4), broker $(col dispatch 5)); the rest $rest"
echo "  cpu during the life: client $(col dispatch 6), broker $(col dispatch 7), executor $(col dispatch 8), launcher $(col dispatch 9), job and shepherd $(col dispatch 10), other $(col dispatch 11)"
echo "task-spooler, p50 (us): flushes during the wait $(col tsp 3); cpu during the life: client $(col tsp 6), other (its server among them) $(col tsp 11)"
echo "so of the gap, the flushes are about $ours_flush us and the rest $((rest - ts_life)) us (medians: the parts need not add up)"

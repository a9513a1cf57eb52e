#!/usr/bin/env bash
# Side-by-side benchmark: hpc-batch against the original Python tool (a
# checkout at $BENCH_UPSTREAM; skipped when unset) and against the floor, a
# bare fork+exec of the same command. Prints ratios (ours / other), so the
# table means the same on any machine. Both daemons run in user mode on
# scratch paths; as root everything runs as `nobody`.
#
#   bench/run.sh            # BENCH_N (default 200) submissions per measurement
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh >/dev/null
N=${BENCH_N:-200}
FINISHED=${BENCH_FINISHED:-10000}
QUEUED=${BENCH_QUEUED:-10000}

scratch=$(mktemp -d /tmp/hpc-batch-bench.XXXXXX)
chmod 0755 "$scratch"
cmake --install build --prefix "$scratch/prefix" >/dev/null
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  chown -R nobody:nogroup "$scratch"
  as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; sleep 0.5; rm -rf "$scratch"; }
trap cleanup EXIT

now_ns() { date +%s%N; }
percentile() { sort -n | awk -v p="$1" '{a[NR]=$1} END {i=int((NR-1)*p/100)+1; print a[i]}'; }

# start_daemon NAME CLIENT... : sets CLIENT to the argv that runs its client.
start_daemon() {
  local name=$1 dir=$scratch/$1
  "${as_user[@]}" mkdir -p "$dir/work"
  case $name in
    ours)
      "${as_user[@]}" "$scratch/prefix/sbin/hpc-batchd" --no-cgroups --socket "$dir/sock" \
        --state-dir "$dir/state" --dev-dir "$dir/dev" --max-lifetime 1h --reserve-cpu 0 \
        --keep-finished "$FINISHED" --log-level warning 2>"$dir/log" &
      CLIENT=("$scratch/prefix/bin/dispatch");;
    upstream)
      local group; group=$(for g in sudo adm staff; do getent group $g >/dev/null && { echo $g; break; }; done)
      PYTHONPATH="$BENCH_UPSTREAM" "${as_user[@]}" python3 -m hpc_batch.daemon --no-cgroups --no-gpu-mask \
        --admin-group "$group" --socket "$dir/sock" --state-dir "$dir/state" --dev-dir "$dir/dev" \
        --max-lifetime 1h --reserve-cpu 0 --keep-finished "$FINISHED" --log-level WARNING 2>"$dir/log" &
      CLIENT=(env PYTHONPATH="$BENCH_UPSTREAM" python3 -m hpc_batch.client);;
  esac
  pids+=($!)
  for _ in $(seq 100); do [ -S "$dir/sock" ] && break; sleep 0.1; done
  [ -S "$dir/sock" ] || { cat "$dir/log"; echo "$name daemon did not start" >&2; exit 1; }
}

client() { (cd "$scratch/$1/work" && HPC_BATCH_SOCKET="$scratch/$1/sock" "${as_user[@]}" "${CLIENT[@]}" "${@:2}"); }

# Submit latency (one client, N sequential round trips), ms.
submit_latency() {
  local name=$1 t0 t1
  for _ in $(seq "$N"); do
    t0=$(now_ns); client "$name" new --no-output -- true >/dev/null; t1=$(now_ns)
    echo $(( (t1 - t0) / 1000 ))
  done > "$scratch/$name.lat"
  P50[$name]=$(percentile 50 < "$scratch/$name.lat"); P99[$name]=$(percentile 99 < "$scratch/$name.lat")
}

# Submissions per second from 8 concurrent clients.
throughput() {
  local name=$1 t0 t1
  export -f client; export scratch
  t0=$(now_ns)
  seq $((N * 2)) | xargs -P 8 -I{} bash -c "cd '$scratch/$name/work' && HPC_BATCH_SOCKET='$scratch/$name/sock' ${as_user[*]} ${CLIENT[*]} new --no-output -- true >/dev/null"
  t1=$(now_ns)
  TPUT[$name]=$(( N * 2 * 1000000000 / (t1 - t0) ))
}

# Submit-to-exec: from just before `new` to the job's first instruction
# (the job writes its own clock), median over S2E_RUNS runs, microseconds.
# Each run starts on an idle daemon (the previous job gone, so it never
# waits for a cpu or a memory budget), and a floor run follows it, so both
# see the same machine; the floor (a bare fork+exec of the same command as
# the same user) is reported from the runs beside our daemon.
S2E_RUNS=${BENCH_S2E_RUNS:-60}
wait_idle() {
  for _ in $(seq 200); do
    client "$1" list | grep -q '^no jobs' && return
    sleep 0.01
  done
  echo "warning: $1 still has jobs after 2 s; measuring anyway" >&2
}
submit_to_exec() {
  local name=$1 t0 dir=$scratch/$1/work f=$scratch/$1.floor.t
  : > "$scratch/$name.s2e"; : > "$scratch/$name.floor"
  for i in $(seq "$S2E_RUNS"); do
    wait_idle "$name"
    t0=$(now_ns)
    client "$name" new --no-output -- sh -c "date +%s%N > $dir/t.$i" >/dev/null
    for _ in $(seq 200); do [ -s "$dir/t.$i" ] && break; sleep 0.01; done
    echo $(( ($(cat "$dir/t.$i") - t0) / 1000 )) >> "$scratch/$name.s2e"
    t0=$(now_ns); (cd "$dir" && "${as_user[@]}" sh -c "date +%s%N > $f.$i")
    echo $(( ($(cat "$f.$i") - t0) / 1000 )) >> "$scratch/$name.floor"
  done
  S2E[$name]=$(percentile 50 < "$scratch/$name.s2e")
  FLOOR[$name]=$(percentile 50 < "$scratch/$name.floor")
}

list_finished() {
  local name=$1 t0 t1 have
  for _ in $(seq 600); do
    have=$(client "$name" list --finished | grep -c ' done ' || true)
    [ "$have" -ge "$FINISHED" ] && break
    seq $(( (FINISHED - have) < 500 ? (FINISHED - have) : 500 )) |
      xargs -P 8 -I{} bash -c "cd '$scratch/$name/work' && HPC_BATCH_SOCKET='$scratch/$name/sock' ${as_user[*]} ${CLIENT[*]} new --no-output -- true >/dev/null"
  done
  t0=$(now_ns); client "$name" list --finished >/dev/null; t1=$(now_ns)
  LIST[$name]=$(( (t1 - t0) / 1000 ))
}

# role_rss_kb PID NAME: VmRSS of the daemon's child whose command line
# names NAME (our broker or executor); 0 when there is none.
role_rss_kb() {
  local p
  for p in $(pgrep -P "$1" || true); do
    if tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q "$2"; then
      awk '/VmRSS/{print $2}' "/proc/$p/status"; return
    fi
  done
  echo 0
}

# QUEUED jobs waiting behind one exclusive job that holds the machine; the
# daemon is stopped right after measuring, so none of them ever runs.
queue_behind_holder() {
  local name=$1 dir=$scratch/$1/work
  client "$name" new --exclusive --no-output -- sh -c "echo \$\$ > $dir/holder.pid; exec sleep 600" >/dev/null
  for _ in $(seq 200); do [ -s "$dir/holder.pid" ] && break; sleep 0.05; done
  seq "$QUEUED" |
    xargs -P 8 -I{} bash -c "cd '$dir' && HPC_BATCH_SOCKET='$scratch/$name/sock' ${as_user[*]} ${CLIENT[*]} new --no-output -- true >/dev/null"
}

stop_holder() {
  local name=$1
  kill -TERM "${pids[-1]}" 2>/dev/null || true
  sleep 0.5
  [ -s "$scratch/$name/work/holder.pid" ] && kill -KILL "$(cat "$scratch/$name/work/holder.pid")" 2>/dev/null || true
}

rss_kb() { # sum of VmRSS over the daemon's process tree
  local root=$1 total=0 p
  for p in $root $(pgrep -P "$root" || true); do
    total=$(( total + $(awk '/VmRSS/{print $2}' /proc/$p/status 2>/dev/null || echo 0) ))
  done
  echo $total
}

declare -A P50 P99 TPUT S2E FLOOR LIST RSS
systems=(ours)
[ -n "${BENCH_UPSTREAM:-}" ] && systems+=(upstream) || echo "BENCH_UPSTREAM unset: skipping the original tool"
for s in "${systems[@]}"; do
  start_daemon "$s"
  RSS[$s.idle]=$(rss_kb "${pids[-1]}")
  RSS[$s.broker.idle]=$(role_rss_kb "${pids[-1]}" hpc-batch-broker)
  RSS[$s.executor.idle]=$(role_rss_kb "${pids[-1]}" hpc-batch-executor)
  submit_latency "$s"; throughput "$s"; submit_to_exec "$s"; list_finished "$s"
  queue_behind_holder "$s"
  RSS[$s.busy]=$(rss_kb "${pids[-1]}")
  RSS[$s.broker.busy]=$(role_rss_kb "${pids[-1]}" hpc-batch-broker)
  RSS[$s.executor.busy]=$(role_rss_kb "${pids[-1]}" hpc-batch-executor)
  stop_holder "$s"
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
printf '\n%-34s %12s %14s %14s\n' "measurement" "hpc-batch" "vs upstream" "vs floor"
row() { printf '%-34s %12s %14s %14s\n' "$1" "$2" "$3" "$4"; }
up() { [ -n "${BENCH_UPSTREAM:-}" ] && ratio "$1" "$2" || echo "skipped"; }
row "submit latency p50 (us)" "${P50[ours]}" "$(up "${P50[ours]}" "${P50[upstream]:-0}")" "-"
row "submit latency p99 (us)" "${P99[ours]}" "$(up "${P99[ours]}" "${P99[upstream]:-0}")" "-"
row "submissions/s, 8 clients" "${TPUT[ours]}" "$(up "${TPUT[ours]}" "${TPUT[upstream]:-0}")" "-"
row "submit-to-exec p50 (us)" "${S2E[ours]}" "$(up "${S2E[ours]}" "${S2E[upstream]:-0}")" "$(ratio "${S2E[ours]}" "${FLOOR[ours]}")"
row "list --finished, ${FINISHED} jobs (us)" "${LIST[ours]}" "$(up "${LIST[ours]}" "${LIST[upstream]:-0}")" "-"
row "daemon RSS idle, all roles (KiB)" "${RSS[ours.idle]}" "$(up "${RSS[ours.idle]}" "${RSS[upstream.idle]:-0}")" "-"
row "  broker RSS idle (KiB)" "${RSS[ours.broker.idle]}" "-" "-"
row "  executor RSS idle (KiB)" "${RSS[ours.executor.idle]}" "-" "-"
row "daemon RSS, ${QUEUED} queued (KiB)" "${RSS[ours.busy]}" "$(up "${RSS[ours.busy]}" "${RSS[upstream.busy]:-0}")" "-"
row "  broker RSS, ${QUEUED} queued (KiB)" "${RSS[ours.broker.busy]}" "-" "-"
row "  executor RSS, ${QUEUED} queued (KiB)" "${RSS[ours.executor.busy]}" "-" "-"
echo
echo "floor: bare fork+exec submit-to-exec p50 ${FLOOR[ours]} us over the same ${S2E_RUNS} runs. Targets: submissions/s >= 10x upstream; submit-to-exec <= 2x floor."

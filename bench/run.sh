#!/usr/bin/env bash
# Side-by-side benchmark: hpc-batch beside task-spooler (`tsp`), nq, the
# original Python tool, https://github.com/Yiannis128/hpc-batch (a checkout
# at $BENCH_UPSTREAM; skipped when unset)
# and two floors: a bare fork+exec of the job's command from the same shell
# (beside submit-to-exec), and a client that does nothing (/bin/true) run
# by the same client loops (beside the submission rate and latency).
# Every system gets the same job (`true`), the same 8 concurrent clients and
# the same user; ratios are printed (hpc-batch / other), so the table means
# the same on any machine. Daemons run in user mode on scratch paths; as
# root everything runs as `nobody`.
#
# Beside the submission rate of the 8-client burst, its completed jobs/s:
# from its first submission until its last job has ended, each system
# running as many jobs at once as it is set to (ours and task-spooler one
# per cpu; nq one after another, as it always does).
#
# What is timed is the submit command itself: each client is one bash loop
# running as the user (one setpriv per loop, not per call) that stamps
# $EPOCHREALTIME around every call, so no wrapper fork lands in a figure.
#
#   bench/run.sh     # sizes: BENCH_N (200 sequential submits), BENCH_BURST
#                    # (2000 submits from 8 clients), BENCH_S2E_RUNS (60),
#                    # BENCH_SPACED (12 submits 2.5 s apart, as a user at a
#                    # prompt: no answer of an earlier one is still fresh),
#                    # BENCH_QUEUED (2000), BENCH_SYSTEMS (ours ts nq upstream)
#   BENCH_PREFIX=DIR bench/run.sh   # an installed tree instead of this build
#   BENCH_TMP=/dev/shm bench/run.sh # scratch (state dirs included) on tmpfs,
#                    # where fsync is free: what durability costs, by difference
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BENCH_PREFIX:-}" ]; then
  scripts/install-deps.sh
  scripts/build.sh >/dev/null
fi
N=${BENCH_N:-200}
BURST=${BENCH_BURST:-2000}
S2E_RUNS=${BENCH_S2E_RUNS:-60}
QUEUED=${BENCH_QUEUED:-2000}
SPACED=${BENCH_SPACED:-12}
CLIENTS=8
read -r -a wanted <<< "${BENCH_SYSTEMS:-ours ts nq upstream}"

# The peers come from Debian; without root or apt they are skipped.
if [ "$(id -u)" -eq 0 ] && { ! command -v tsp >/dev/null || ! command -v nq >/dev/null; }; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends task-spooler nq \
    >/dev/null 2>&1 || echo "could not install task-spooler/nq; skipping what is missing" >&2
fi

scratch=$(mktemp -d "${BENCH_TMP:-/tmp}/hpc-batch-bench.XXXXXX")
chmod 0755 "$scratch"
if [ -n "${BENCH_PREFIX:-}" ]; then
  cp -a "$BENCH_PREFIX" "$scratch/prefix"
else
  cmake --install build --prefix "$scratch/prefix" >/dev/null
fi
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  chown -R nobody:nogroup "$scratch"
  as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  [ -S "$scratch/ts/sock" ] && TS_SOCKET=$scratch/ts/sock "${as_user[@]}" tsp -K >/dev/null 2>&1 || true
  sleep 0.5; rm -rf "$scratch"
}
trap cleanup EXIT

percentile() { sort -n | awk -v p="$1" '{a[NR]=$1} END {if (NR == 0) {print 0; exit} i=int((NR-1)*p/100)+1; print a[i]}'; }

# The client loop, run as the user: `loop.sh SYSTEM MODE ARGS...`.
cat > "$scratch/loop.sh" <<'EOF'
#!/usr/bin/env bash
set -u
sys=$1 mode=$2; shift 2
dir=$SCRATCH/$sys
cd "$dir/work"
export HPC_BATCH_SOCKET=$dir/sock TS_SOCKET=$dir/sock NQDIR=$dir/nq TMPDIR=$dir
case $sys in
  ours) submit() { "$SCRATCH/prefix/bin/dispatch" new --no-output -- "$@"; } ;;
  upstream) submit() { PYTHONPATH=$BENCH_UPSTREAM python3 -m hpc_batch.client new --no-output -- "$@"; } ;;
  ts) submit() { tsp -n "$@"; } ;;
  nq) submit() { nq -q "$@"; } ;;
  floor) submit() { /bin/true; } ;;  # a client that does nothing
esac
us() { local t=$EPOCHREALTIME; echo "${t/./}"; }
case $mode in
  latency)  # N sequential submits; one latency (us) per line
    for ((i = 0; i < $1; i++)); do
      t0=$EPOCHREALTIME; submit true >/dev/null; t1=$EPOCHREALTIME
      echo $(( ${t1/./} - ${t0/./} ))
    done;;
  spaced)  # N sequential submits 2.5 s apart, as a user at a prompt; latency (us) per line
    for ((i = 0; i < $1; i++)); do
      sleep 2.5
      t0=$EPOCHREALTIME; submit true >/dev/null; t1=$EPOCHREALTIME
      echo $(( ${t1/./} - ${t0/./} ))
    done;;
  burst)  # N submits back to back; first line start, last line end, latencies between
    us
    for ((i = 0; i < $1; i++)); do
      t0=$EPOCHREALTIME; submit true >/dev/null || echo "submit failed" >&2; t1=$EPOCHREALTIME
      echo $(( ${t1/./} - ${t0/./} ))
    done
    us;;
  s2e)  # submit-to-exec then floor, alternately; "s2e floor" (us) per line
    for ((i = 0; i < $1; i++)); do
      t0=$(us); submit sh -c "date +%s%N > $dir/work/t.$i" >/dev/null
      for _ in $(seq 1000); do [ -s "$dir/work/t.$i" ] && break; sleep 0.01; done
      if [ ! -s "$dir/work/t.$i" ]; then echo "run $i: the job did not run within 10 s" >&2; continue; fi
      s2e=$(( $(cat "$dir/work/t.$i") / 1000 - t0 ))
      t0=$(us); sh -c "date +%s%N > $dir/work/f.$i"
      echo "$s2e $(( $(cat "$dir/work/f.$i") / 1000 - t0 ))"
      sleep 0.05  # the job's end, so the next run starts on an idle system
    done;;
esac
EOF
chmod 0755 "$scratch/loop.sh"
[ "$(id -u)" -eq 0 ] && chown nobody:nogroup "$scratch/loop.sh"
loop() { SCRATCH=$scratch BENCH_UPSTREAM=${BENCH_UPSTREAM:-} "${as_user[@]}" "$scratch/loop.sh" "$@"; }
client() { (cd "$scratch/$1/work" && HPC_BATCH_SOCKET="$scratch/$1/sock" "${as_user[@]}" "${CLIENT[@]}" "${@:2}"); }

# start_system NAME: starts its daemon (if it has one); sets CLIENT and DAEMON.
start_system() {
  local name=$1 dir=$scratch/$1
  "${as_user[@]}" mkdir -p "$dir/work" "$dir/nq"
  DAEMON=""
  case $name in
    ours)
      "${as_user[@]}" "$scratch/prefix/sbin/hpc-batchd" --no-cgroups --socket "$dir/sock" \
        --state-dir "$dir/state" --dev-dir "$dir/dev" --max-lifetime 1h --reserve-cpu 0 \
        --keep-finished $((N + BURST + S2E_RUNS + 10)) --log-level warning 2>"$dir/log" &
      DAEMON=$!; pids+=($!)
      CLIENT=("$scratch/prefix/bin/dispatch");;
    upstream)
      local group; group=$(for g in sudo adm staff; do getent group $g >/dev/null && { echo $g; break; }; done)
      PYTHONPATH="$BENCH_UPSTREAM" "${as_user[@]}" python3 -m hpc_batch.daemon --no-cgroups --no-gpu-mask \
        --admin-group "$group" --socket "$dir/sock" --state-dir "$dir/state" --dev-dir "$dir/dev" \
        --max-lifetime 1h --reserve-cpu 0 --keep-finished $((N + BURST + S2E_RUNS + 10)) \
        --log-level WARNING 2>"$dir/log" &
      DAEMON=$!; pids+=($!)
      CLIENT=(env PYTHONPATH="$BENCH_UPSTREAM" python3 -m hpc_batch.client);;
    ts)  # its server forks off the first client call; as many slots as cpus, as ours runs
      (cd "$dir/work" && TS_SOCKET=$dir/sock TMPDIR=$dir "${as_user[@]}" tsp -S "$(nproc)" >/dev/null)
      DAEMON=$(pgrep -u "$(stat -c %u "$dir")" -x tsp | tail -1 || true);;
  esac
  if [ "$name" = ours ] || [ "$name" = upstream ]; then
    for _ in $(seq 100); do [ -S "$dir/sock" ] && break; sleep 0.1; done
    [ -S "$dir/sock" ] || { cat "$dir/log"; echo "$name daemon did not start" >&2; exit 1; }
  fi
}

# wait_drained NAME: until every submitted job has ended (bounded: 10 min).
wait_drained() {
  local name=$1 dir=$scratch/$1
  for _ in $(seq 6000); do
    case $name in
      ours|upstream) client "$name" list | grep -q '^no jobs' && return;;
      ts) TS_SOCKET=$dir/sock "${as_user[@]}" tsp -l | grep -qE ' (queued|running) ' || return 0;;
      nq) NQDIR=$dir/nq "${as_user[@]}" timeout 600 nq -w >/dev/null 2>&1; return 0;;
    esac
    sleep 0.1
  done
  echo "warning: $name still has jobs after 10 min" >&2
}

# rss_kb PID: VmRSS of PID and its children (a daemon and its roles).
rss_kb() {
  local total=0 p
  [ -n "$1" ] || { echo 0; return; }
  for p in $1 $(pgrep -P "$1" || true); do
    total=$(( total + $(awk '/VmRSS/{print $2}' /proc/$p/status 2>/dev/null || echo 0) ))
  done
  echo $total
}
# role_rss_kb PID NAME: VmRSS of the child of PID whose command line names NAME.
role_rss_kb() {
  local p
  [ -n "$1" ] || { echo 0; return; }
  for p in $(pgrep -P "$1" || true); do
    if tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q "$2"; then
      awk '/VmRSS/{print $2}' "/proc/$p/status"; return
    fi
  done
  echo 0
}

# measure_submits NAME: one client's latencies, then the burst from CLIENTS.
measure_submits() {
  local name=$1 out=$scratch/$1 c
  loop "$name" latency "$N" > "$out.lat"
  P50[$name]=$(percentile 50 < "$out.lat"); P99[$name]=$(percentile 99 < "$out.lat")
  if [ "$SPACED" -gt 0 ] && [ "$name" != floor ]; then
    loop "$name" spaced "$SPACED" > "$out.spaced"
    SP50[$name]=$(percentile 50 < "$out.spaced")
  fi
  for c in $(seq $CLIENTS); do loop "$name" burst $((BURST / CLIENTS)) > "$out.burst.$c" & done
  wait_for_clients
  local first last
  first=$(for c in $(seq $CLIENTS); do head -1 "$out.burst.$c"; done | sort -n | head -1)
  last=$(for c in $(seq $CLIENTS); do tail -1 "$out.burst.$c"; done | sort -n | tail -1)
  TPUT[$name]=$(( BURST / CLIENTS * CLIENTS * 1000000 / (last - first) ))
  BURST_FIRST[$name]=$first
  for c in $(seq $CLIENTS); do sed '1d;$d' "$out.burst.$c"; done > "$out.burstlat"
  BP50[$name]=$(percentile 50 < "$out.burstlat")
}
measure() {
  local name=$1 out=$scratch/$1
  measure_submits "$name"
  wait_drained "$name"
  # End to end: from the burst's first submission to its last job's end
  # (as each system's own listing shows it, polled every 0.1 s; nq's wait
  # returns at the end itself).
  local drained=${EPOCHREALTIME/./}
  DONE[$name]=$(( BURST / CLIENTS * CLIENTS * 1000000 / (drained - BURST_FIRST[$name]) ))
  loop "$name" s2e "$S2E_RUNS" > "$out.s2e"
  S2E[$name]=$(awk '{print $1}' "$out.s2e" | percentile 50)
  FLOOR[$name]=$(awk '{print $2}' "$out.s2e" | percentile 50)
  wait_drained "$name"
}
wait_for_clients() { local j; for j in $(jobs -p); do case " ${pids[*]} " in *" $j "*) ;; *) wait "$j";; esac; done; }

# ours (and upstream): listing the finished jobs, and RSS with QUEUED jobs
# waiting behind one exclusive job that holds the machine.
queue_behind_holder() {
  local name=$1 dir=$scratch/$1/work c
  client "$name" new --exclusive --no-output -- sh -c "echo \$\$ > $dir/holder.pid; exec sleep 600" >/dev/null
  for _ in $(seq 200); do [ -s "$dir/holder.pid" ] && break; sleep 0.05; done
  for c in $(seq $CLIENTS); do loop "$name" burst $((QUEUED / CLIENTS)) > /dev/null & done
  wait_for_clients
}
stop_system() {
  local name=$1
  case $name in
    ours|upstream)
      kill -TERM "$DAEMON" 2>/dev/null || true; sleep 0.5
      [ -s "$scratch/$name/work/holder.pid" ] && kill -KILL "$(cat "$scratch/$name/work/holder.pid")" 2>/dev/null || true;;
    ts) TS_SOCKET=$scratch/ts/sock "${as_user[@]}" tsp -K >/dev/null 2>&1 || true;;
  esac
}

declare -A P50 P99 SP50 BP50 TPUT BURST_FIRST DONE S2E FLOOR LIST LISTED RSS
systems=()
for s in "${wanted[@]}"; do
  case $s in
    ours) systems+=(ours);;
    ts) command -v tsp >/dev/null && systems+=(ts) || echo "tsp missing: skipping task-spooler";;
    nq) command -v nq >/dev/null && systems+=(nq) || echo "nq missing: skipping nq";;
    upstream) [ -n "${BENCH_UPSTREAM:-}" ] && systems+=(upstream) || echo "BENCH_UPSTREAM unset: skipping the original tool";;
  esac
done
# sync_write_us: the mean time of one 4 KiB O_DSYNC write in the scratch
# directory, before and after: a shared virtual disk's sync latency drifts
# from minute to minute, and every durable acknowledgment waits on it.
sync_write_us() {
  local t0 t1
  t0=$EPOCHREALTIME
  dd if=/dev/zero of="$scratch/sync-probe" bs=4k count=200 oflag=dsync 2>/dev/null || { echo "?"; return; }
  t1=$EPOCHREALTIME
  rm -f "$scratch/sync-probe"
  echo $(( (${t1/./} - ${t0/./}) / 200 ))
}
SYNC_BEFORE=$(sync_write_us)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for s in "${systems[@]}"; do
  start_system "$s"
  sleep 0.5
  RSS[$s.idle]=$(rss_kb "$DAEMON")
  RSS[$s.broker.idle]=$(role_rss_kb "$DAEMON" hpc-batch-broker)
  RSS[$s.executor.idle]=$(role_rss_kb "$DAEMON" hpc-batch-executor)
  measure "$s"
  if [ "$s" = ours ] || [ "$s" = upstream ]; then
    LISTED[$s]=$(client "$s" list --finished | grep -c ' done ' || true)
    t0=$EPOCHREALTIME; client "$s" list --finished >/dev/null; t1=$EPOCHREALTIME
    LIST[$s]=$(( ${t1/./} - ${t0/./} ))
    queue_behind_holder "$s"
    RSS[$s.busy]=$(rss_kb "$DAEMON")
  fi
  stop_system "$s"
done
# The client floor: the same loops running /bin/true instead of a submit
# command. Every system here starts one client process per submission, and
# one that does any work costs more than /bin/true, so this rate is a
# ceiling for them all on this machine.
"${as_user[@]}" mkdir -p "$scratch/floor/work"
measure_submits floor
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
SYNC_AFTER=$(sync_write_us)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
has() { [[ " ${systems[*]} " == *" $1 "* ]]; }
vs() { has "$2" && ratio "$1" "$3" || echo "skipped"; }
printf '\n%-32s %10s %10s %10s %10s %10s %10s\n' "measurement" "hpc-batch" "ts" "nq" "vs ts" "vs nq" "vs upstream"
row() {  # row LABEL KEY-ARRAY
  local -n a=$2
  printf '%-32s %10s %10s %10s %10s %10s %10s\n' "$1" "${a[ours]:--}" "${a[ts]:--}" "${a[nq]:--}" \
    "$(vs "${a[ours]:-0}" ts "${a[ts]:-0}")" "$(vs "${a[ours]:-0}" nq "${a[nq]:-0}")" \
    "$(vs "${a[ours]:-0}" upstream "${a[upstream]:-0}")"
}
row "submit p50, 1 client (us)" P50
row "submit p99, 1 client (us)" P99
[ "$SPACED" -gt 0 ] && row "submit p50, 2.5 s apart (us)" SP50
row "submit p50, $CLIENTS clients (us)" BP50
row "submissions/s, $CLIENTS clients" TPUT
row "completed jobs/s, same burst" DONE
row "submit-to-exec p50 (us)" S2E
row "floor beside it (us)" FLOOR
declare -A RSSIDLE=([ours]=${RSS[ours.idle]:-} [ts]=${RSS[ts.idle]:-} [upstream]=${RSS[upstream.idle]:-})
row "daemon RSS idle (KiB)" RSSIDLE
echo
echo "hpc-batch: submit-to-exec $(ratio "${S2E[ours]:-0}" "${FLOOR[ours]:-0}") the floor (${FLOOR[ours]:-?} us, a bare fork+exec of the same command beside it)"
echo "client floor (/bin/true from the same loops): p50 ${P50[floor]} us, $CLIENTS clients ${TPUT[floor]}/s"
has ours && echo "hpc-batch submits at $(ratio "${TPUT[ours]}" "${TPUT[floor]}") the floor's rate; its p50 is $(ratio "${P50[ours]}" "${P50[floor]}") the floor's"
has ts && echo "task-spooler submits at $(ratio "${TPUT[ts]}" "${TPUT[floor]}") the floor's rate; its p50 is $(ratio "${P50[ts]}" "${P50[floor]}") the floor's"
echo "hpc-batch roles idle: broker ${RSS[ours.broker.idle]:-?} KiB, executor ${RSS[ours.executor.idle]:-?} KiB, all ${RSS[ours.idle]:-?} KiB"
echo "hpc-batch: list --finished of ${LISTED[ours]:-?} jobs ${LIST[ours]:-?} us; RSS with $QUEUED queued ${RSS[ours.busy]:-?} KiB"
has upstream && echo "upstream: list --finished ${LIST[upstream]} us; RSS idle ${RSS[upstream.idle]} KiB, with $QUEUED queued ${RSS[upstream.busy]} KiB"
echo "nq has no daemon (a process per queued job) and runs its jobs one after another; ts keeps its queue in its server's memory."
echo "load average before: $LOAD_BEFORE, after: $LOAD_AFTER ($(nproc) cpus)"
echo "one 4 KiB O_DSYNC write in $(dirname "$scratch"): $SYNC_BEFORE us before, $SYNC_AFTER us after"
# The filesystem matters as much as the disk: ext4 without a journal (as on
# some cloud images) searches past every inode freed in the last minute
# when it makes a file, so a run right after another that deleted many
# files is slower; with a journal, each sync write waits for a commit.
echo "scratch filesystem: $(findmnt -no FSTYPE,SOURCE -T "$scratch" 2>/dev/null || echo '?')$(
  dev=$(findmnt -no SOURCE -T "$scratch" 2>/dev/null); [ -n "$dev" ] &&
  [ "$(cat "/sys/fs/ext4/$(basename "$dev")/journal_task" 2>/dev/null)" = "<none>" ] &&
  echo ", ext4 without a journal")"

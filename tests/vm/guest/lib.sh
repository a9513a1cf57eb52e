# Helpers for the guest checks (sourced). Each check prints one PASS or FAIL
# line; main.sh exits non-zero when any failed. Checks compare what the kernel
# shows (cgroupfs, /proc) with what was asked, never the daemon's own account.

passed=0 failed=0
pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
# check DESCRIPTION COMMAND...: passes when COMMAND succeeds.
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
# expect DESCRIPTION WANT GOT: passes on equal strings, says both otherwise.
expect() {
  if [ "$2" = "$3" ]; then pass "$1 ($3)"; else fail "$1: want '$2', got '$3'"; fi
}
note() { printf '[%6.1fs] %s\n' "$(cut -d' ' -f1 /proc/uptime)" "$*"; }

# wait_for SECONDS COMMAND...: polls every 0.2 s. Everything is slow under
# TCG, so deadlines are generous; they only bound a hang.
wait_for() {
  local deadline=$(($(date +%s) + $1))
  shift
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

# The submitting user: the daemon never runs a job as root.
as_user() { runuser -u "$job_user" -- env HPC_BATCH_SOCKET="$HPC_BATCH_SOCKET" "$@"; }
# The packaged one unless a check installed its own elsewhere.
dispatch_bin=/usr/bin/dispatch
dispatch() { as_user "$dispatch_bin" "$@"; }

# submit ARGS... -- CMD...: prints the job id. cwd is the user's home, where
# output.<id>.log lands.
submit() {
  local out
  out=$(cd "$job_home" && dispatch new "$@" 2>&1) || { echo "submit failed: $out" >&2; return 1; }
  grep -oE '[0-9]+' <<< "$out" | head -n 1
}

# Fields of job ID in `dispatch list --finished`, counted from the right:
# COMMAND may hold spaces, the last four columns (no GPUs here) cannot.
list_row() { dispatch list --finished 2> /dev/null | awk -v id="$1" 'NR > 1 && $2 == id'; }
job_mem() { list_row "$1" | awk '{ print $(NF - 3) }'; }
job_state() { list_row "$1" | awk '{ print $(NF - 1) }'; }
job_exit() { list_row "$1" | awk '{ print $NF }'; }
# A number in job ID's `list --finished --json` object: usage_of ID FIELD
# (wall_s, user_s, system_s, peak_memory_bytes, oom_kills, source as text).
job_json() { dispatch list --finished --json 2> /dev/null | sed 's/{"user"/\n{"user"/g' | grep "\"id\":$1,"; }
usage_of() { job_json "$1" | grep -oE "\"$2\":\[?\"?[A-Za-z0-9.e+-]*" | head -n 1 | sed -E 's/.*:\[?"?//'; }
# within LOW VALUE HIGH: LOW <= VALUE <= HIGH, as decimals.
within() { awk -v l="$1" -v v="$2" -v h="$3" 'BEGIN { exit !(v != "" && v + 0 >= l + 0 && v + 0 <= h + 0) }'; }
job_running() { [ "$(job_state "$1")" = running ]; }
job_done() { [ "$(job_state "$1")" = done ]; }

daemon_up() { dispatch list > /dev/null 2>&1; }

# The job's live output buffer (root can read it while the job runs).
job_output() { cat "$state_dir/jobs/$1/output" 2>/dev/null; }
output_has() { job_output "$1" | grep -q -- "$2"; }
job_cgroup() { echo "$cgroup_root/hpc-batch/job-$1"; }

# Which NUMA node holds every cpu of a cpulist ("2-3" -> 1); empty if several.
node_of_cpus() {
  local cpus=$1 n found=""
  for n in /sys/devices/system/node/node[0-9]*; do
    local mine
    mine=$(expand_list "$(cat "$n/cpulist")")
    local all=1 c
    for c in $(expand_list "$cpus"); do grep -qx "$c" <<< "$mine" || all=0; done
    [ $all -eq 1 ] && found=${n##*node}
  done
  echo "$found"
}
# "0-2,5" -> one id per line.
expand_list() {
  local part
  for part in ${1//,/ }; do
    if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
  done
}

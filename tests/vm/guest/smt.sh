# Whole cores under SMT (sourced by main.sh): the guest's cores have two
# threads. Two concurrent --cpu 1 jobs must each hold every sibling of each
# cpu they hold, and share no cpu; a third waits, though logical cpus are
# idle. Each job's own Cpus_allowed_list (read from inside it) is compared
# with the guest kernel's thread_siblings_list, not with the daemon's account.
cgroup_root=/sys/fs/cgroup state_dir=/var/lib/hpcb-smt
export HPC_BATCH_SOCKET=/run/hpcb-smt/sock
siblings_of() { expand_list "$(cat "/sys/devices/system/cpu/cpu$1/topology/thread_siblings_list")"; }
threads=$(siblings_of 0 | wc -l)
expect "the guest has two threads per core (cpu0's siblings)" 2 "$threads"

systemd-run --quiet --unit=hpcb-smt -p "Delegate=cpuset memory pids" -p KillMode=process \
  -p MemorySwapMax=0 /usr/sbin/hpc-batchd --admin-group hpcadm --socket "$HPC_BATCH_SOCKET" \
  --state-dir "$state_dir" --dev-dir /dev/hpcb-smt --reserve-cpu 0 --reserve-mem 0.25 \
  --min-job-mem 0.1 --max-lifetime 1h
if ! wait_for 30 daemon_up; then
  fail "daemon (hpcb-smt) answers dispatch list"
  journalctl -u hpcb-smt --no-pager | tail -n 20
  return
fi

# new_job: `dispatch new --cpu 1` of a job that prints its own cpus and
# sleeps; its output goes to $new_out, its id to $new_id.
new_job() {
  new_out=$(cd "$job_home" && dispatch new --cpu 1 --max-mem 0.2 -- \
    sh -c 'grep ^Cpus_allowed_list: /proc/self/status; exec sleep 600' 2>&1)
  new_id=$(grep -oE '[0-9]+' <<< "$new_out" | head -n 1)
  echo "dispatch new --cpu 1: $new_out"
}
own_cpus() { job_output "$1" | awk '/^Cpus_allowed_list:/ { print $2 }'; }
has_own_cpus() { [ -n "$(own_cpus "$1")" ]; }
# whole_cores CPULIST: every sibling of every cpu in it is in it.
whole_cores() {
  local mine c s
  mine=$(expand_list "$1")
  for c in $mine; do
    for s in $(siblings_of "$c"); do grep -qx "$s" <<< "$mine" || return 1; done
  done
}

new_job; a=$new_id
check "job $a: dispatch new says it got $threads cpus = 1 core" \
  grep -q "^job $a running ($threads cpus = 1 core, " <<< "$new_out"
new_job; b=$new_id
check "job $b: dispatch new says it got $threads cpus = 1 core" \
  grep -q "^job $b running ($threads cpus = 1 core, " <<< "$new_out"
wait_for 60 has_own_cpus "$a" && wait_for 60 has_own_cpus "$b"
cpus_a=$(own_cpus "$a") cpus_b=$(own_cpus "$b")
for id in $a $b; do
  cpus=$(own_cpus "$id")
  echo "job $id: Cpus_allowed_list $cpus; cpuset.cpus.effective $(cat "$(job_cgroup "$id")/cpuset.cpus.effective" 2>/dev/null)"
  expect "job $id: holds $threads cpus" "$threads" "$(expand_list "$cpus" | wc -l)"
  check "job $id: every sibling of its cpus ($cpus) is its own" whole_cores "$cpus"
done
shared=$(comm -12 <(expand_list "$cpus_a" | sort) <(expand_list "$cpus_b" | sort) | tr '\n' ' ')
expect "jobs $a ($cpus_a) and $b ($cpus_b) share no cpu" "" "$shared"

# Every core is taken: a third --cpu 1 job waits for one, then gets a's.
new_job; c=$new_id
check "job $c: queued while both cores are held" \
  grep -q "^job $c queued ($threads cpus = 1 core, " <<< "$new_out"
dispatch kill "$a" > /dev/null
wait_for 60 has_own_cpus "$c"
expect "job $c: starts on the core job $a left" "$cpus_a" "$(own_cpus "$c")"
check "job $c: every sibling of its cpus is its own" whole_cores "$(own_cpus "$c")"
dispatch kill "$b" > /dev/null; dispatch kill "$c" > /dev/null
wait_for 60 job_done "$b" && wait_for 60 job_done "$c"
check "jobs $b and $c end on dispatch kill" job_done "$c"
systemctl stop hpcb-smt

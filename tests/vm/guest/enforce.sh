# Kernel enforcement of what the broker placed (sourced by main.sh): cpuset
# and mems on the right node, memory.max with swap off, OOM reported as oom,
# dispatch kill through cgroup.kill, spread budgets marked '+'.
#
# The daemon runs under a transient unit with the shipped unit's cgroup
# settings (Delegate= is what makes systemd enable cpuset at the root), with
# nothing held back: 4 cpus and ~2 GiB per node is all the guest has.
cgroup_root=/sys/fs/cgroup state_dir=/var/lib/hpcb-enforce
export HPC_BATCH_SOCKET=/run/hpcb-enforce/sock
systemd-run --quiet --unit=hpcb-enforce -p "Delegate=cpuset memory pids" -p KillMode=process \
  -p MemorySwapMax=0 /usr/sbin/hpc-batchd --admin-group hpcadm --socket "$HPC_BATCH_SOCKET" \
  --state-dir "$state_dir" --dev-dir /dev/hpcb-enforce --reserve-cpu 0 --reserve-mem 0.25 \
  --min-job-mem 0.1 --max-lifetime 1h
if ! wait_for 30 daemon_up; then
  fail "daemon under a transient unit answers dispatch list"
  journalctl -u hpcb-enforce --no-pager | tail -n 20
  return
fi
pass "daemon runs with cgroups (cpuset+memory) under a transient unit"

# Two jobs of two cpus fill one node each, so each must be on a node of its own.
probe='grep -E "^(Cpus|Mems)_allowed_list" /proc/self/status; cat /proc/self/cgroup; exec memhog 64 600'
a=$(submit --cpu 2 --max-mem 0.5 -- sh -c "$probe")
b=$(submit --cpu 2 --max-mem 0.5 -- sh -c "$probe")
wait_for 60 output_has "$a" holding && wait_for 60 output_has "$b" holding
check "jobs $a and $b started and allocated 64 MiB" output_has "$b" holding
nodes=""
for id in $a $b; do
  cg=$(job_cgroup "$id")
  cpus=$(cat "$cg/cpuset.cpus.effective" 2>/dev/null)
  mems=$(cat "$cg/cpuset.mems.effective" 2>/dev/null)
  node=$(node_of_cpus "$cpus")
  echo "job $id: cpuset.cpus.effective=$cpus cpuset.mems.effective=$mems; own view:" $(job_output "$id" | head -n 3)
  check "job $id: cpuset.cpus ($cpus) is a whole node" test -n "$node" -a "$(expand_list "$cpus" | wc -l)" -eq 2
  expect "job $id: cpuset.mems is its cpus' node" "$node" "$mems"
  expect "job $id: the job's own Cpus_allowed_list matches its cpuset" "$cpus" \
    "$(job_output "$id" | awk '/^Cpus_allowed_list/ { print $2 }')"
  expect "job $id: the job's own Mems_allowed_list matches" "$mems" \
    "$(job_output "$id" | awk '/^Mems_allowed_list/ { print $2 }')"
  expect "job $id: runs in its own cgroup" "0::/hpc-batch/job-$id" "$(job_output "$id" | grep '^0::')"
  # Where the 64 MiB went: the cpuset's mems, not just its file, decide it.
  here_mib=$(awk -v n="N$node=" '/^anon / { for (i = 2; i <= NF; i++) if (index($i, n) == 1) print int(substr($i, length(n) + 1) / 1048576) }' "$cg/memory.numa_stat")
  check "job $id: its memory is on node $node (${here_mib:-?} MiB anon there)" test "${here_mib:-0}" -ge 60
  expect "job $id: memory.max is the 0.5G budget" 536870912 "$(cat "$cg/memory.max")"
  expect "job $id: memory.swap.max" 0 "$(cat "$cg/memory.swap.max")"
  expect "job $id: memory.oom.group" 1 "$(cat "$cg/memory.oom.group")"
  expect "job $id: not marked as spread" 0.5G "$(job_mem "$id")"
  nodes+=" $node"
done
check "jobs $a and $b are on different nodes ($nodes)" test "$(echo $nodes | tr ' ' '\n' | sort -u | wc -l)" -eq 2
dispatch kill "$a" > /dev/null; dispatch kill "$b" > /dev/null
wait_for 60 job_done "$a" && wait_for 60 job_done "$b"
check "jobs $a and $b end on dispatch kill" job_done "$b"

# Over budget: 0.25G of memory.max, no swap to spill into.
o=$(submit --cpu 1 --max-mem 0.25 -- memhog 1024)
wait_for 120 job_done "$o"
expect "job $o (memhog 1 GiB in a 0.25G budget): EXIT column" oom "$(job_exit "$o")"
check "job $o: list names the oom on stderr" sh -c "runuser -u $job_user -- env HPC_BATCH_SOCKET=$HPC_BATCH_SOCKET \
  /usr/bin/dispatch list --finished 2>&1 >/dev/null | grep -q 'job $o: killed for exceeding its 0.25G memory budget'"
check "job $o: its cgroup was removed" test ! -e "$(job_cgroup "$o")"
check "job $o: its usage counts the oom kill ($(usage_of "$o" oom_kills))" within 1 "$(usage_of "$o" oom_kills)" 1000000

# What jobs used, from their cgroups: 2 s of two busy threads is ~4 s of
# cpu in ~2 s of wall time; 200 MiB touched is a peak of at least that.
u=$(submit --cpu 2 --max-mem 0.5 -- sh -c 'spin() { timeout 2 sh -c "while :; do :; done"; }; spin & spin; wait')
m=$(submit --cpu 1 --max-mem 0.5 -- memhog 200)
wait_for 60 job_done "$u" && wait_for 60 job_done "$m"
cpu=$(awk -v u="$(usage_of "$u" user_s)" -v s="$(usage_of "$u" system_s)" 'BEGIN { print u + s }')
wall=$(usage_of "$u" wall_s)
echo "job $u: source $(usage_of "$u" source), cpu ${cpu}s, wall ${wall}s; job $m: peak $(usage_of "$m" peak_memory_bytes) bytes"
expect "job $u: usage comes from its cgroup" cgroup "$(usage_of "$u" source)"
check "job $u: two threads for 2 s used about 4 s of cpu (${cpu}s)" within 3.2 "$cpu" 4.8
check "job $u: in about 2 s of wall time (${wall}s)" within 1.9 "$wall" 3.5
check "job $m: a peak of at least the 200 MiB it touched" within 209715200 "$(usage_of "$m" peak_memory_bytes)" 536870912
check "job $m: list --long shows the peak" sh -c "runuser -u $job_user -- env HPC_BATCH_SOCKET=$HPC_BATCH_SOCKET \
  /usr/bin/dispatch list --finished --long | awk -v id=$m '\$2 == id { print \$NF }' | grep -qE '^0\.2[0-9]*G$'"

# A job that ignores SIGTERM, with a child in a session of its own: only
# cgroup.kill reaches that child (it is in no process group the daemon knows).
k=$(submit --cpu 1 --max-mem 0.2 -- sh -c \
  'trap "" TERM; setsid sh -c "echo child \$\$; exec sleep 600" & echo main $$; while :; do sleep 1; done')
wait_for 60 output_has "$k" child
pids=$(cat "$(job_cgroup "$k")/cgroup.procs" | tr '\n' ' ')
echo "job $k: processes before kill: $pids"
check "job $k: several processes in its cgroup" test "$(wc -w <<< "$pids")" -ge 3
dispatch kill "$k" > /dev/null
# SIGTERM first, SIGKILL (cgroup.kill) after the broker's 10 s grace.
wait_for 60 job_done "$k"
expect "job $k: EXIT after dispatch kill" killed "$(job_exit "$k")"
left=""
for p in $pids; do kill -0 "$p" 2>/dev/null && left+=" $p($(cat /proc/$p/comm))"; done
expect "job $k: none of its processes is left" "" "$left"
wait_for 10 test ! -e "$(job_cgroup "$k")"
check "job $k: its cgroup was removed" test ! -e "$(job_cgroup "$k")"

# A job that leaves a process behind: its cgroup is killed and removed once
# the main process exits (rmdir waits for the killed process to be gone).
g=$(submit --cpu 1 --max-mem 0.2 -- sh -c 'setsid sleep 600 & echo left $!')
wait_for 60 job_done "$g"
leftover=$(awk '/^left/ { print $2 }' "$job_home/output.$g.log")
echo "job $g: left pid ${leftover:-?} behind"
gone() { [ -n "$leftover" ] && ! kill -0 "$leftover" 2>/dev/null; }
wait_for 10 gone
check "job $g: the process it left behind is killed" gone
wait_for 10 test ! -e "$(job_cgroup "$g")"
check "job $g: its cgroup was removed" test ! -e "$(job_cgroup "$g")"

# More memory than any node has left: charged to both nodes, marked '+'.
s=$(submit --cpu 1 --max-mem 2.5 -- sleep 600)
wait_for 60 job_running "$s"
expect "job $s (2.5G, more than a node): MEM column" 2.5G+ "$(job_mem "$s")"
expect "job $s: cpuset.mems spans both nodes" 0-1 "$(cat "$(job_cgroup "$s")/cpuset.mems.effective")"
expect "job $s: memory.max is the whole 2.5G" 2684354560 "$(cat "$(job_cgroup "$s")/memory.max")"
dispatch kill "$s" > /dev/null
wait_for 60 job_done "$s"

systemctl stop hpcb-enforce

# The shipped unit under the guest's systemd (sourced by main.sh): install,
# then `systemctl reload` and `systemctl restart` while jobs run. A reload
# re-execs the main PID in place, so a job still exits to its parent and its
# exit code is kept; a restart leaves jobs running (KillMode=process, job
# cgroups outside the unit) and the new daemon adopts them: exit code
# unknown, output still delivered.
cgroup_root=/sys/fs/cgroup state_dir=/var/lib/hpc-batch
export HPC_BATCH_SOCKET=/run/hpc-batch/hpc-batch.sock
main_pid() { systemctl show -p MainPID --value hpc-batch; }
"$repo/scripts/hpc-batch-install" --admin-group hpcadm
if ! wait_for 30 daemon_up; then
  fail "hpc-batch.service answers dispatch list"
  journalctl -u hpc-batch --no-pager | tail -n 20
  return
fi
pass "hpc-batch.service installed and running"
expect "MainPID is the launcher" hpc-batchd "$(cat /proc/"$(main_pid)"/comm)"
check "Delegate= gave hpc-batch/ cpuset and memory" \
  grep -qE 'cpuset.*memory|memory.*cpuset' $cgroup_root/hpc-batch/cgroup.controllers

# Each job waits for a file of ours, so the order of events is ours too.
rm -f /tmp/go-*
waiter='echo started; while [ ! -e /tmp/go-$HPC_BATCH_JOB_ID ]; do sleep 0.2; done; echo finished; exit 7'
# Defaults hold back 2 cpus and 2G (here no cpus: whole cores are held back,
# and each node keeps its only one): these budgets fit what is left.
r1=$(submit --cpu 1 --max-mem 0.2 -- sh -c "$waiter")
r2=$(submit --cpu 1 --max-mem 0.2 -- sh -c "$waiter")
wait_for 60 output_has "$r1" started && wait_for 60 output_has "$r2" started
check "jobs $r1 and $r2 running" job_running "$r2"
p1=$(head -n 1 "$(job_cgroup "$r1")/cgroup.procs") p2=$(head -n 1 "$(job_cgroup "$r2")/cgroup.procs")

before=$(main_pid)
systemctl reload hpc-batch
wait_for 30 daemon_up
expect "reload: MainPID unchanged" "$before" "$(main_pid)"
check "reload: job $r1 still running (pid $p1)" kill -0 "$p1"
check "reload: list still shows job $r1 running" job_running "$r1"
touch /tmp/go-"$r1"
wait_for 60 job_done "$r1"
expect "reload: job $r1 kept its exit code" 7 "$(job_exit "$r1")"
check "reload: job $r1 output delivered" grep -q finished "$job_home/output.$r1.log"

# A job cgroup nobody owns, as a crash would leave: pruned at start-up.
mkdir $cgroup_root/hpc-batch/job-999
systemctl restart hpc-batch
wait_for 30 daemon_up
after=$(main_pid)
check "restart: a new MainPID ($before -> $after)" test "$after" != "$before" -a "$after" != 0
check "restart: job $r2 survived (pid $p2)" kill -0 "$p2"
check "restart: the empty leftover cgroup job-999 was pruned" test ! -e $cgroup_root/hpc-batch/job-999
check "restart: job $r2 adopted, listed as running" job_running "$r2"
touch /tmp/go-"$r2"
wait_for 60 job_done "$r2"
check "restart: job $r2 finished" job_done "$r2"
echo "job $r2 after restart: EXIT $(job_exit "$r2") (the exit code of a job that is no longer our child is unknown)"
check "restart: job $r2 output delivered" grep -q finished "$job_home/output.$r2.log"
journalctl -u hpc-batch --no-pager -o cat | grep -E 'adopted|reload|finished' | head -n 10

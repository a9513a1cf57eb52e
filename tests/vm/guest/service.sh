# The packaged unit under the guest's systemd (sourced by main.sh, after
# package.sh installed the .deb): `systemctl start`, a user's first job,
# then `systemctl reload`, a reinstall through hpc-batch-install and
# `systemctl restart` while jobs run, and last a purge. A reload re-execs
# the main PID in place, so a job still exits to its parent and its exit
# code is kept; a restart leaves jobs running (KillMode=process, job
# cgroups outside the unit) and the new daemon adopts them; each job's
# shepherd records its exit status, so that is kept too, and the output is
# delivered.
cgroup_root=/sys/fs/cgroup state_dir=/var/lib/hpc-batch
export HPC_BATCH_SOCKET=/run/hpc-batch/hpc-batch.sock
main_pid() { systemctl show -p MainPID --value hpc-batch; }
systemctl start hpc-batch
if ! wait_for 30 daemon_up; then
  fail "systemctl start hpc-batch: the packaged service answers dispatch list"
  journalctl -u hpc-batch --no-pager | tail -n 20
  return
fi
pass "systemctl start hpc-batch: the packaged service answers dispatch list"
expect "MainPID is the launcher" hpc-batchd "$(cat /proc/"$(main_pid)"/comm)"
expect "MainPID runs the packaged hpc-batchd" /usr/libexec/hpc-batch/hpc-batchd \
  "$(readlink /proc/"$(main_pid)"/exe)"
roles=$(for p in $(pgrep -P "$(main_pid)"); do readlink /proc/"$p"/exe; done | sort | tr '\n' ' ')
expect "its roles run from beside it" \
  "/usr/libexec/hpc-batch/hpc-batch-broker /usr/libexec/hpc-batch/hpc-batch-executor " "$roles"
check "Delegate= gave hpc-batch/ cpuset and memory" \
  grep -qE 'cpuset.*memory|memory.*cpuset' $cgroup_root/hpc-batch/cgroup.controllers

# What a user does first: as alice, from her home, with the installed dispatch.
echo "alice\$ dispatch new -- echo hello"
hello_out=$(cd "$job_home" && dispatch new -- echo hello 2>&1)
echo "$hello_out" | sed 's/^/  /'
h=$(grep -oE '[0-9]+' <<< "$hello_out" | head -n 1)
wait_for 60 job_done "$h"
expect "job $h (echo hello, as alice): output.$h.log" hello "$(cat "$job_home/output.$h.log" 2>&1)"
expect "job $h: EXIT" 0 "$(job_exit "$h")"
expect "job $h: its output file belongs to alice" alice "$(stat -c %U "$job_home/output.$h.log" 2>&1)"

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

# The package again, through hpc-batch-install, while job r2 runs: the
# postinst reloads the daemon in place; --admin-group goes in a drop-in.
echo "# hpc-batch-install --deb $(basename "$deb") --admin-group hpcadm"
"$repo/scripts/hpc-batch-install" --deb "$deb" --admin-group hpcadm 2>&1 | sed 's/^/  /'
wait_for 30 daemon_up
expect "reinstall: MainPID unchanged" "$before" "$(main_pid)"
check "reinstall: job $r2 still running (pid $p2)" kill -0 "$p2"
check "reinstall: the drop-in sets HPC_BATCHD_OPTIONS" \
  sh -c "systemctl show -p Environment hpc-batch | grep -q 'HPC_BATCHD_OPTIONS=--admin-group hpcadm'"

# A job cgroup nobody owns, as a crash would leave: pruned at start-up.
mkdir $cgroup_root/hpc-batch/job-999
systemctl restart hpc-batch
wait_for 30 daemon_up
after=$(main_pid)
check "restart: a new MainPID ($before -> $after)" test "$after" != "$before" -a "$after" != 0
check "restart: the daemon runs with the drop-in's --admin-group hpcadm" \
  sh -c "tr '\\0' ' ' < /proc/$after/cmdline | grep -q -- '--admin-group hpcadm'"
check "restart: job $r2 survived (pid $p2)" kill -0 "$p2"
check "restart: the empty leftover cgroup job-999 was pruned" test ! -e $cgroup_root/hpc-batch/job-999
check "restart: job $r2 adopted, listed as running" job_running "$r2"
touch /tmp/go-"$r2"
wait_for 60 job_done "$r2"
check "restart: job $r2 finished" job_done "$r2"
expect "restart: job $r2 kept its real exit code (its shepherd recorded it)" 7 "$(job_exit "$r2")"
check "restart: job $r2 output delivered" grep -q finished "$job_home/output.$r2.log"
journalctl -u hpc-batch --no-pager -o cat | grep -E 'adopted|reload|finished' | head -n 10

# Purge: the daemon stops, a job still running is killed with its cgroup,
# and none of the state is left.
k=$(submit --cpu 1 --max-mem 0.2 -- sleep 600)
wait_for 60 job_running "$k"
kp=$(head -n 1 "$(job_cgroup "$k")/cgroup.procs")
echo "# hpc-batch-install --uninstall --purge"
"$repo/scripts/hpc-batch-install" --uninstall --purge 2>&1 | sed 's/^/  /'
expect "purge: dpkg no longer has hpc-batch" "" \
  "$(dpkg-query -W -f='${db:Status-Status}' hpc-batch 2>/dev/null | grep -v not-installed)"
expect "purge: the service is stopped" inactive "$(systemctl is-active hpc-batch 2>&1)"
check "purge: job $k (pid $kp) was killed" sh -c "! kill -0 $kp 2>/dev/null"
check "purge: no job cgroups left" test ! -e $cgroup_root/hpc-batch
check "purge: /var/lib/hpc-batch removed" test ! -e /var/lib/hpc-batch
check "purge: the unit and hpc-batch-install's drop-in are gone" \
  test ! -e /usr/lib/systemd/system/hpc-batch.service -a ! -e /etc/systemd/system/hpc-batch.service.d

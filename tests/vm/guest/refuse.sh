# Isolation that cannot be delivered is refused (sourced by main.sh): the
# daemon exits 78 and names --no-cgroups. Each --cgroup-root here is a
# cgroup of our own whose subtree_control withholds one controller; the
# daemon's hpc-batch/ inside it then lacks that controller, as it would under
# a unit without Delegate=. A control with both controllers must start.
r=/tmp/refuse
mkdir -p $r
# Controllers reach a child only through every ancestor's subtree_control;
# in the guest we may set the root's (the hpcb-enforce unit has just gone).
echo "+cpuset +memory" > /sys/fs/cgroup/cgroup.subtree_control
# start_daemon CGROUP_ROOT: the daemon, bounded to 20 s, log in $r/log.
# refused CGROUP_ROOT WHAT: it must refuse that root.
start_daemon() {
  rm -rf "$r/state" "$r/sock" "$r/dev"
  timeout 20 /usr/sbin/hpc-batchd --admin-group hpcadm --cgroup-root "$1" \
    --state-dir $r/state --socket $r/sock --dev-dir $r/dev --reserve-cpu 0 --reserve-mem 0.25 \
    --min-job-mem 0.1 > $r/log 2>&1
}
refused() {
  start_daemon "$1"
  local rc=$?
  echo "--cgroup-root $1 ($2): exit $rc: $(grep -m 1 ERROR $r/log)"
  expect "$2: daemon exits 78" 78 "$rc"
  check "$2: the refusal names --no-cgroups" grep -q -- --no-cgroups $r/log
}
for withheld in cpuset memory; do
  cg=/sys/fs/cgroup/hpcb-no-$withheld
  mkdir -p $cg
  if [ $withheld = cpuset ]; then echo +memory > $cg/cgroup.subtree_control; else echo +cpuset > $cg/cgroup.subtree_control; fi
  refused $cg "no $withheld controller"
  check "no $withheld controller: the refusal names the controller" grep -q "the $withheld controller" $r/log
  rmdir $cg/hpc-batch $cg 2>/dev/null
done
mkdir -p $r/plain
refused $r/plain "--cgroup-root not a cgroup2 mount"

cg=/sys/fs/cgroup/hpcb-both
mkdir -p $cg
echo "+cpuset +memory" > $cg/cgroup.subtree_control
start_daemon $cg &
pid=$!
wait_for 30 grep -q "cgroups: cpuset+memory enforced" $r/log
check "control: both controllers present, the daemon starts" grep -q "cgroups: cpuset+memory enforced" $r/log
kill $pid 2>/dev/null  # timeout(1): passes SIGTERM on, the daemon stops cleanly
wait $pid
rmdir $cg/hpc-batch $cg 2>/dev/null

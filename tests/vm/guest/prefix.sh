# hpc-batch-install without the package (sourced by main.sh, after
# service.sh purged it): cmake --install of the host's build into /opt,
# whose unit is outside systemd's search path, then a job, then
# --uninstall --purge.
#
# cmake --install writes its manifest into the build directory, the host's
# and read-only here: an overlay over it takes that write.
b=$repo/build prefix=/opt/hpc-batch
mkdir -p /tmp/build-rw/up /tmp/build-rw/work
mount -t overlay -o lowerdir="$b",upperdir=/tmp/build-rw/up,workdir=/tmp/build-rw/work build-rw "$b"
cgroup_root=/sys/fs/cgroup state_dir=/var/lib/hpc-batch
export HPC_BATCH_SOCKET=/run/hpc-batch/hpc-batch.sock
dispatch_bin=$prefix/bin/dispatch
echo "# hpc-batch-install --prefix $prefix --admin-group hpcadm"
"$repo/scripts/hpc-batch-install" --prefix $prefix --admin-group hpcadm 2>&1 | sed 's/^/  /'
if wait_for 30 daemon_up; then
  pass "hpc-batch-install --prefix $prefix: the service answers dispatch list"
  pid=$(systemctl show -p MainPID --value hpc-batch)
  expect "MainPID runs $prefix's hpc-batchd" $prefix/libexec/hpc-batch/hpc-batchd "$(readlink /proc/"$pid"/exe)"
  expect "the unit is linked from /etc" $prefix/lib/systemd/system/hpc-batch.service \
    "$(readlink /etc/systemd/system/hpc-batch.service)"
  expect "it is enabled" enabled "$(systemctl is-enabled hpc-batch 2>&1)"
  h=$(submit -- echo hello)
  wait_for 60 job_done "$h"
  expect "job $h (echo hello, $prefix/bin/dispatch): output" hello "$(cat "$job_home/output.$h.log" 2>&1)"
else
  fail "hpc-batch-install --prefix $prefix: the service answers dispatch list"
  journalctl -u hpc-batch --no-pager | tail -n 20
fi
echo "# hpc-batch-install --uninstall --purge --prefix $prefix"
"$repo/scripts/hpc-batch-install" --uninstall --purge --prefix $prefix 2>&1 | sed 's/^/  /'
expect "uninstall: the service is stopped" inactive "$(systemctl is-active hpc-batch 2>&1)"
expect "uninstall: nothing left under $prefix" "" "$(find $prefix -mindepth 1 ! -type d 2>/dev/null)"
check "uninstall: the unit link is gone" test ! -e /etc/systemd/system/hpc-batch.service -a ! -L /etc/systemd/system/hpc-batch.service
check "uninstall: /var/lib/hpc-batch purged" test ! -e /var/lib/hpc-batch
umount "$b"
dispatch_bin=/usr/bin/dispatch

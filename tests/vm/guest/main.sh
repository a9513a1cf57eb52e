#!/bin/bash
# Guest side of scripts/vm-test.sh, run as root by boot.sh:
#
#   main.sh REPO TOOLS DEB
#
# REPO is the host's checkout (read-only, with build/), TOOLS holds the
# host-built memhog and DEB, the package made from that build. Sets the
# guest up (users, the package installed with dpkg), then runs each group of
# checks; exits 1 if any check failed.
repo=$1 tools=$2 deb=$3
here=$repo/tests/vm/guest
. "$here/lib.sh"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin

note "guest: kernel $(uname -r), PID 1 $(cat /proc/1/comm), $(nproc) cpus"
expect "PID 1 is systemd" systemd "$(cat /proc/1/comm)"
expect "no cgroup v1 hierarchy mounted" 0 "$(grep -c ' cgroup ' /proc/mounts)"
expect "/sys/fs/cgroup is cgroup2" cgroup2fs "$(stat -fc %T /sys/fs/cgroup)"
for n in /sys/devices/system/node/node[0-9]*; do
  echo "${n##*/}: cpus $(cat "$n/cpulist"), $(awk '/MemTotal/ { print $4 $5 }' "$n/meminfo")"
done
for c in /sys/devices/system/cpu/cpu[0-9]*; do
  echo "${c##*/}: siblings $(cat "$c/topology/thread_siblings_list")"
done
expect "two NUMA nodes" 2 "$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)"

# The guest's /etc is a tmpfs overlay on the host's: these users exist only here.
groupadd hpcadm
useradd -m -d /home/alice -s /bin/bash alice
job_user=alice job_home=/home/alice
cp "$tools/memhog" /usr/local/bin/memhog

note "--- package"
. "$here/package.sh"
[ "$(dpkg-query -W -f='${db:Status-Status}' hpc-batch 2>/dev/null)" = installed ] || exit 1

for group in enforce smt gpu refuse service prefix; do
  note "--- $group"
  . "$here/$group.sh"
done
echo "--- what the daemons logged at warning and above:"
# Our daemons log to stderr with no syslog priority prefix: grep, not -p.
journalctl --no-pager -o cat -u hpcb-enforce -u hpcb-smt -u hpcb-gpu -u hpc-batch | grep -E ' (WARNING|ERROR) ' | head -n 40
note "guest checks: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

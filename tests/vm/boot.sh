#!/usr/bin/env bash
# Boots a throw-away qemu guest and runs one script in it as root:
#
#   tests/vm/boot.sh [-t TIMEOUT_S] [-s HOSTDIR[:rw]]... SCRIPT [ARGS...]
#
# The guest: the Debian kernel from setup.sh, cgroup v2 only, systemd as
# PID 1, VM_CPUS cpus (4) in cores of VM_THREADS SMT threads (2) and
# VM_MEM_MB memory (4096), split evenly over VM_NODES NUMA nodes (2), one
# socket each; its root is the host's /usr and /etc (read-only, see init).
# Each -s HOSTDIR appears at the same path in the guest, read-only unless
# :rw. Exit status: SCRIPT's; 124 on timeout; 125 when the guest died
# without a result. The serial console is kept in the run directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
vm_dir=${VM_DIR:-/var/tmp/hpc-batch-vm}
cpus=${VM_CPUS:-4} mem=${VM_MEM_MB:-4096} nodes=${VM_NODES:-2} threads=${VM_THREADS:-2}
timeout=300 shares=()
while getopts t:s: o; do
  case $o in t) timeout=$OPTARG;; s) shares+=("$OPTARG");; *) exit 2;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n 2,12p "$0"; exit 2; }
[ -f "$vm_dir/initramfs.cpio.gz" ] || { echo "boot.sh: run tests/vm/setup.sh first" >&2; exit 2; }
((cpus % (nodes * threads) == 0 && mem % nodes == 0)) ||
  { echo "boot.sh: cpus must split into $nodes nodes of whole $threads-thread cores, memory over $nodes nodes" >&2; exit 2; }

run=${VM_RUN_DIR:-$(mktemp -d /tmp/hpcb-vm.XXXXXX)}
h=$run/harness
mkdir -p "$h/units"
cp "$here"/units/* "$h/units/"
cp "$here/guest/wrap.sh" "$h/"
cp "$1" "$h/test.sh"
shift
{ echo '#!/bin/bash'; printf 'exec /bin/bash /harness/test.sh'; printf ' %q' "$@"; echo; } > "$h/run.sh"
rm -f "$h/rc" "$h/out.log" "$h/boot.log"

# qemu numbers cpus socket by socket, and within a core thread by thread:
# node i's range is socket i, its siblings adjacent (cpus 0-1 are one core).
numa=()
for ((i = 0; i < nodes; i++)); do
  first=$((i * cpus / nodes)) last=$(((i + 1) * cpus / nodes - 1))
  numa+=(-object "memory-backend-ram,id=mem$i,size=$((mem / nodes))M"
         -numa "node,nodeid=$i,cpus=$first-$last,memdev=mem$i")
done
fs=() cmdline_shares="" n=0
share() { # TAG HOSTPATH ro|rw
  local ro=""
  [ "$3" = ro ] && ro=,readonly=on
  # multidevs=remap: /usr and a checkout may sit on different host devices;
  # without it inode numbers can collide in the guest.
  fs+=(-fsdev "local,id=fs_$1,path=$2,security_model=none,multidevs=remap$ro"
       -device "virtio-9p-pci,fsdev=fs_$1,mount_tag=$1")
}
share usr /usr ro
share etc /etc ro
share modules "$(readlink -f "$vm_dir/modules")" ro
share harness "$h" rw
cmdline_shares+=" hpcb.share=harness:/harness:rw"
for s in "${shares[@]}"; do
  p=${s%:rw} mode=ro
  [ "$p" != "$s" ] && mode=rw
  p=$(readlink -f "$p") n=$((n + 1))
  share "s$n" "$p" "$mode"
  cmdline_shares+=" hpcb.share=s$n:$p:$mode"
done

# vendor=GenuineIntel: TCG's max cpu says AuthenticAMD without topoext, and
# a Linux guest then sees every thread as a core (no siblings); as Intel it
# reads the SMT layout from CPUID leaf 0xB.
# cgroup_no_v1=all and unified_cgroup_hierarchy: a v2-only guest whatever
# the host runs. No KVM: /dev/kvm on these hosts is a nested (PVM) one on
# which a stock kernel hangs in early boot; TCG is slow but works (VM_ACCEL
# to try otherwise).
cmdline="console=ttyS0 panic=-1 quiet loglevel=4 mitigations=off tsc=reliable
cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1 systemd.unit=hpcb-harness.target
systemd.show_status=false systemd.log_level=notice systemd.journald.forward_to_console=0$cmdline_shares"
t0=$(date +%s.%N)
set +e
timeout --kill-after=10 "$timeout" qemu-system-x86_64 \
  -accel "${VM_ACCEL:-tcg,thread=multi}" -cpu max,vendor=GenuineIntel \
  -smp "cpus=$cpus,sockets=$nodes,cores=$((cpus / nodes / threads)),threads=$threads" \
  -m "${mem}M" "${numa[@]}" \
  -nodefaults -no-user-config -display none -monitor none -no-reboot \
  -serial "file:$run/console.log" "${fs[@]}" \
  -kernel "$vm_dir/vmlinuz" -initrd "$vm_dir/initramfs.cpio.gz" -append "${cmdline//$'\n'/ }" \
  < /dev/null > "$run/qemu.log" 2>&1
qrc=$?
set -e
wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[ -f "$h/out.log" ] && cat "$h/out.log"
[ -f "$h/boot.log" ] && cat "$h/boot.log"
if [ $qrc -eq 124 ] || [ $qrc -eq 137 ]; then
  echo "boot.sh: timed out after ${timeout}s; console log $run/console.log:" >&2
  tail -n 30 "$run/console.log" >&2
  exit 124
fi
if [ ! -f "$h/rc" ]; then
  echo "boot.sh: the guest ended without a result (qemu status $qrc, ${wall}s); console log $run/console.log:" >&2
  tail -n 40 "$run/console.log" >&2
  cat "$run/qemu.log" >&2
  exit 125
fi
rc=$(cat "$h/rc")
echo "boot.sh: VM wall time ${wall}s, test status $rc, run directory $run"
exit "$rc"

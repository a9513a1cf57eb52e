#!/usr/bin/env bash
# Real-kernel tests: boots a qemu guest (cgroup v2 only, 2 NUMA nodes, systemd
# as PID 1; see tests/vm/) and runs tests/vm/guest/main.sh there against the
# .deb made from build/ (cpack -G DEB), which the guest installs with dpkg,
# and against build/ itself (hpc-batch-install --prefix). Prints PASS/FAIL
# per check; exits non-zero if any check failed or the guest did not finish
# within VM_TIMEOUT seconds (default 600).
# Skips (exit 0, with a message) only when qemu or a kernel cannot be had;
# VM_REQUIRED=1 makes that a failure instead.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
for b in bin/hpc-batchd bin/hpc-batch-executor bin/hpc-batch-broker bin/hpc-batch-as-user bin/dispatch; do
  [ -x "build/$b" ] || { echo "vm-test: build/$b is missing; run scripts/build.sh first" >&2; exit 1; }
done
set +e
tests/vm/setup.sh
rc=$?
set -e
if [ $rc -eq 77 ]; then
  [ "${VM_REQUIRED:-0}" = 1 ] && { echo "vm-test: FAIL: no VM (VM_REQUIRED=1)" >&2; exit 1; }
  echo "vm-test: SKIPPED: the guest tests need qemu and a Debian kernel (see above)"
  exit 0
fi
[ $rc -eq 0 ] || exit $rc

tools=$(mktemp -d /tmp/hpcb-vm-tools.XXXXXX)
trap 'rm -rf "$tools"' EXIT
chmod 0755 "$tools"
cc -O2 -Wall -o "$tools/memhog" tests/vm/guest/memhog.c
# The package is built fresh into the shared directory, so the guest never
# installs a stale one. cpack builds ALL first (its preinstall step).
if ! (cd build && cpack -G DEB -B "$tools/pkg") > "$tools/cpack.log" 2>&1; then
  cat "$tools/cpack.log"
  echo "vm-test: FAIL: cpack -G DEB" >&2
  exit 1
fi
deb=$(ls "$tools"/pkg/hpc-batch_*.deb)
echo "vm-test: $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
set +e
# The host's dpkg database goes in read-only: the guest's /usr is the host's,
# so that database is what tells the guest's dpkg the dependencies are there.
tests/vm/boot.sh -t "${VM_TIMEOUT:-600}" -s "$PWD" -s "$tools" -s /var/lib/dpkg \
  tests/vm/guest/main.sh "$PWD" "$tools" "$deb"
rc=$?
set -e
echo "vm-test: total $(($(date +%s) - t0))s"
if [ $rc -ne 0 ]; then
  echo "vm-test: FAIL (status $rc)"
  exit 1
fi
echo "vm-test: PASS"

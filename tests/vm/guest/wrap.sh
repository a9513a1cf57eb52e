#!/bin/bash
# Guest side of boot.sh: runs the test script with its output both on the
# serial console (for the console log) and in /harness/out.log (for the
# host), and leaves its exit status in /harness/rc, written last and renamed
# into place so the host never reads half a result.
echo "guest: test start at uptime $(cut -d' ' -f1 /proc/uptime)s" > /harness/boot.log
set -o pipefail
/bin/bash /harness/run.sh 2>&1 | tee /harness/out.log > /dev/ttyS0
rc=$?
echo "guest: test end at uptime $(cut -d' ' -f1 /proc/uptime)s, rc $rc" >> /harness/boot.log
echo $rc > /harness/rc.tmp && mv /harness/rc.tmp /harness/rc
sync

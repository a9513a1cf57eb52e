# The .deb, installed as an admin would (sourced by main.sh): dpkg -i, then
# what its maintainer scripts must have done, and must not have done.
#
# dpkg needs its database: the host's, shared read-only at /var/lib/dpkg
# (the guest's /usr is the host's, so it describes what is installed here),
# under a tmpfs overlay for dpkg's writes.
mkdir -p /tmp/dpkg-db/up /tmp/dpkg-db/work /var/log
mount -t overlay -o lowerdir=/var/lib/dpkg,upperdir=/tmp/dpkg-db/up,workdir=/tmp/dpkg-db/work \
  dpkg-db /var/lib/dpkg
had_user=$(getent passwd hpc-batch)
echo "# dpkg -i $(basename "$deb")"
t0=$(date +%s)
dpkg -i "$deb" 2>&1 | sed 's/^/  /'
rc=${PIPESTATUS[0]}
expect "dpkg -i $(basename "$deb") exits 0 ($(($(date +%s) - t0)) s)" 0 "$rc"
expect "dpkg: hpc-batch is installed" installed "$(dpkg-query -W -f='${db:Status-Status}' hpc-batch 2>/dev/null)"
dpkg-query -W -f='${Package} ${Version} ${Architecture}; Depends: ${Depends}\n' hpc-batch

user=$(getent passwd hpc-batch)
if [ -n "$had_user" ]; then
  echo "hpc-batch user already existed (host's /etc): $had_user"
  pass "sysusers: the broker's user hpc-batch exists"
else
  expect "postinst (systemd-sysusers) made the broker's user" \
    "hpc-batch:/var/lib/hpc-batch/broker:/usr/sbin/nologin" "$(cut -d: -f1,6,7 <<< "$user")"
fi
check "the broker's user is a system user (uid $(cut -d: -f3 <<< "$user"))" test "$(cut -d: -f3 <<< "$user")" -lt 1000
expect "postinst (systemd-tmpfiles) made /var/lib/hpc-batch" "root 755" "$(stat -c '%U %a' /var/lib/hpc-batch 2>&1)"
expect "postinst (systemd-tmpfiles) made the broker's home" "hpc-batch 700" \
  "$(stat -c '%U %a' /var/lib/hpc-batch/broker 2>&1)"
expect "postinst did not enable hpc-batch.service" disabled "$(systemctl is-enabled hpc-batch 2>&1)"
expect "postinst did not start hpc-batch.service" inactive "$(systemctl is-active hpc-batch 2>&1)"
# /lib is /usr/lib here, and systemd may name the unit by either.
expect "systemd loads the packaged unit" /usr/lib/systemd/system/hpc-batch.service \
  "$(readlink -f "$(systemctl show -p FragmentPath --value hpc-batch)")"
expect "the unit's ExecStart" "/usr/libexec/hpc-batch/hpc-batchd --max-lifetime 24h \$HPC_BATCHD_OPTIONS" \
  "$(sed -n 's/^ExecStart=//p' /usr/lib/systemd/system/hpc-batch.service)"
expect "the unit's Documentation=" "man:hpc-batchd(8) man:dispatch(1)" \
  "$(sed -n 's/^Documentation=//p' /usr/lib/systemd/system/hpc-batch.service)"
check "its man pages are installed" test -f /usr/share/man/man8/hpc-batchd.8.gz -a -f /usr/share/man/man1/dispatch.1.gz
expect "/usr/sbin/hpc-batchd runs" "hpc-batchd $(dpkg-query -W -f='${Version}' hpc-batch)" \
  "$(/usr/sbin/hpc-batchd --version 2>&1)"
expect "dispatch is on PATH" /usr/bin/dispatch "$(type -P dispatch)"
check "bash completion for dispatch is installed" test -f /usr/share/bash-completion/completions/dispatch
# Only its own complaints: other units of the host's /etc are not ours.
verify=$(systemd-analyze verify hpc-batch.service 2>&1 | grep hpc-batch)
expect "systemd-analyze verify hpc-batch.service (ExecStart=, Documentation= resolve)" "" "$verify"

# hpcb_broker_account_problem: says why the existing account `hpc-batch`
# must not become the broker's (nothing when it may, or does not exist).
# systemd-sysusers keeps an existing user as it is, so an ordinary
# account of that name, a person's say, would silently run the broker and
# own its state. A system account (uid up to SYS_UID_MAX in
# /etc/login.defs, 999 without one) is what sysusers would have made.
# Shared by the .deb's postinst (a warning: configure must not fail) and
# scripts/hpc-batch-install (a refusal); POSIX sh. Each substitution has
# its `||`: under dash's set -e a failing one would end postinst.
hpcb_broker_account_problem() {
  entry=$(getent passwd hpc-batch) || return 0
  uid=$(echo "$entry" | cut -d: -f3) || uid=""
  case $uid in '' | *[!0-9]*) return 0 ;; esac
  max=$(awk '$1 == "SYS_UID_MAX" { print $2 }' "${HPCB_LOGIN_DEFS:-/etc/login.defs}" 2>/dev/null) || max=""
  case $max in '' | *[!0-9]*) max=999 ;; esac
  if [ "$uid" -gt "$max" ]; then
    echo "an ordinary account 'hpc-batch' (uid $uid, above SYS_UID_MAX $max) exists, and the broker would run as it and own its state; remove or rename that account first"
  fi
}

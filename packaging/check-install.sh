#!/usr/bin/env bash
# check-install.sh tree|deb CMAKE BUILD_DIR SOURCE_DIR (run by ctest; see
# tests.cmake). The install dirs, relative to the prefix, come in the
# environment. Prints one line per failed check; exit 1 if any failed, 77
# when the deb check cannot run here.
set -uo pipefail
what=$1 cmake=$2 build=$3 src=$4
failed=0
fail() { echo "FAIL: $*"; failed=1; }
check() { local what=$1; shift; "$@" || fail "$what"; }
tmp=$(mktemp -d /tmp/hpcb-install-check.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The files every install has, relative to its prefix.
expected_files() {
  printf '%s\n' "$BINDIR/dispatch" "$SBINDIR/hpc-batchd" \
    "$DAEMONDIR/hpc-batchd" "$DAEMONDIR/hpc-batch-executor" "$DAEMONDIR/hpc-batch-broker" \
    "$DAEMONDIR/hpc-batch-as-user" "$UNITDIR/hpc-batch.service" "$SYSUSERSDIR/hpc-batch.conf" "$TMPFILESDIR/hpc-batch.conf" \
    "$BASHCOMPDIR/dispatch" "$MANDIR/man1/dispatch.1.gz" "$MANDIR/man8/hpc-batchd.8.gz" \
    "$DOCDIR/README.md" "$DOCDIR/SECURITY.md" "$DOCDIR/copyright" "$DOCDIR/changelog.gz" \
    "$DOCDIR/docs/slurm-migration.md" "$DOCDIR/docs/scheduling.md" \
    "$DOCDIR/docs/design.md" "$DOCDIR/docs/user-guide.md" "$DOCDIR/docs/admin-guide.md" \
    "$DOCDIR/docs/security/README.md" "$DOCDIR/docs/security/confinement.md" \
    "$DOCDIR/docs/security/open-issues.md" "$DOCDIR/docs/security/operations.md" \
    "$DOCDIR/docs/security/root-size.md" \
    "$DOCDIR/docs/security/threat-model.md" "share/lintian/overrides/hpc-batch" | sort
}

# check_doc_links DOCDIR: every relative link in the installed Markdown
# names a file that is installed.
check_doc_links() {
  local broken
  broken=$(python3 - "$1" <<'PY'
import os, re, sys
root = sys.argv[1]
for here, _, files in os.walk(root):
    for name in files:
        if not name.endswith(".md"):
            continue
        path = os.path.join(here, name)
        text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not os.path.exists(os.path.join(here, target.split("#")[0])):
                print(f"{os.path.relpath(path, root)}: {target}")
PY
  ) || { fail "the link check did not run"; return; }
  [ -z "$broken" ] || fail "broken links in the installed docs:
$broken"
}

# check_tree ROOT PREFIX: ROOT is where PREFIX's files are (differs under DESTDIR).
check_tree() {
  local root=$1 prefix=$2 got
  got=$(cd "$root" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort)
  [ "$got" = "$(expected_files)" ] ||
    fail "installed files under $prefix differ from the expected:
$(diff <(expected_files) <(echo "$got"))"
  local unit=$root/$UNITDIR/hpc-batch.service daemon=$prefix/$DAEMONDIR/hpc-batchd
  check "ExecStart= names $daemon" \
    grep -qxF "ExecStart=$daemon --max-lifetime 24h \$HPC_BATCHD_OPTIONS" "$unit"
  for kept in "Delegate=cpuset memory pids" KillMode=process RestartPreventExitStatus=78 \
      'ExecReload=/bin/kill -HUP $MAINPID' MemorySwapMax=0 RuntimeDirectory=hpc-batch \
      RuntimeDirectoryPreserve=yes StateDirectory=hpc-batch Restart=on-failure; do
    check "the unit keeps $kept" grep -qxF "$kept" "$unit"
  done
  local doc page
  doc=$(sed -n 's/^Documentation=//p' "$unit")
  [ -n "$doc" ] || fail "the unit has no Documentation="
  for page in $doc; do
    [[ $page =~ ^man:([a-z-]+)\(([0-9])\)$ ]] || { fail "Documentation=$page is not a man page"; continue; }
    check "Documentation=$page is installed" \
      test -f "$root/$MANDIR/man${BASH_REMATCH[2]}/${BASH_REMATCH[1]}.${BASH_REMATCH[2]}.gz"
  done
  check "$SBINDIR/hpc-batchd is a relative link" test -L "$root/$SBINDIR/hpc-batchd"
  case $(readlink "$root/$SBINDIR/hpc-batchd") in /*) fail "$SBINDIR/hpc-batchd links to an absolute path";; esac
  check "the installed roles are executable" test -x "$root/$DAEMONDIR/hpc-batch-executor" -a -x "$root/$DAEMONDIR/hpc-batch-broker" -a -x "$root/$DAEMONDIR/hpc-batch-as-user"
  check "the unit is not executable" test ! -x "$unit"
  check_doc_links "$root/$DOCDIR"
}

# Every subcommand and every flag `--help` shows must be in the man page
# (roff spells - as \-) and every flag in the bash completion.
check_docs() {
  local dispatch=$build/bin/dispatch daemon=$build/bin/hpc-batchd
  local man1 man8 comp=$src/packaging/bash-completion/dispatch
  man1=$(sed 's/\\-/-/g' "$src/docs/man/dispatch.1") man8=$(sed 's/\\-/-/g' "$src/docs/man/hpc-batchd.8")
  local flag sub subs
  # Option names only: the first word of an option line, not flags that
  # descriptions mention.
  flags_of() { "$@" --help | grep -oE '^ +(-[a-zA-Z],)?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z0-9-]+' | sort -u; }
  for flag in $(flags_of "$daemon"); do
    grep -qF -- "$flag" <<< "$man8" || fail "hpc-batchd(8) does not mention $flag"
  done
  export HPC_BATCH_CLIENT_CONFIG=/dev/null HPC_BATCH_BACKEND=slurm
  subs=$("$dispatch" --help | awk '/^Subcommands:/ { on = 1; next } on && NF { print $1 }')
  [ -n "$subs" ] || fail "no subcommands in dispatch --help"
  for flag in $(flags_of "$dispatch"); do
    grep -qF -- "$flag" <<< "$man1" || fail "dispatch(1) does not mention $flag"
  done
  for sub in $subs; do
    grep -qE "^\.SS \"dispatch $sub( |\")" <<< "$man1" || fail "dispatch(1) has no section for '$sub'"
    grep -qE "(^|[ \"])$sub( |\"|$)" "$comp" || fail "the completion does not offer '$sub'"
    for flag in $(flags_of "$dispatch" "$sub"); do
      grep -qF -- "$flag" <<< "$man1" || fail "dispatch(1) does not mention $sub $flag"
      grep -qE -- "(^|[ \"])$flag( |\"|$)" "$comp" || fail "the completion does not offer $sub $flag"
    done
  done
  unset HPC_BATCH_CLIENT_CONFIG HPC_BATCH_BACKEND
  check "the man pages format without warnings" check_man_warnings
}

check_man_warnings() {
  command -v man >/dev/null || return 0
  local out
  out=$(for p in "$src"/docs/man/*.[18]; do MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null; done)
  [ -z "$out" ] || { echo "$out"; return 1; }
}

# complete WORD... : what _dispatch offers for the last word.
complete_words() {
  COMP_WORDS=("$@") COMP_CWORD=$(($# - 1)) COMP_LINE="$*" COMPREPLY=()
  COMP_POINT=${#COMP_LINE}
  _dispatch dispatch "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
  printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}
expect_completion() { # WANT WORD...
  local want=$1 got; shift
  got=$(complete_words "$@")
  [ "$got" = "$want" ] || fail "completing '$*': want '$want', got '$got'"
}
check_completion() {
  (
    # A dispatch that answers list --json as the daemon would.
    mkdir -p "$tmp/fake"
    printf '#!/bin/sh\necho %s\n' \
      "'{\"ok\":true,\"jobs\":[{\"user\":\"a\",\"id\":7,\"argv\":[\"x\"],\"state\":\"running\"},{\"user\":\"a\",\"id\":12,\"state\":\"done\",\"usage\":[{\"wall_s\":1}]},{\"user\":\"a\",\"id\":15,\"argv\":[\"sh\",\"-c\",\"f(){ :; }\"],\"state\":\"done\"}],\"now\":1}'" \
      > "$tmp/fake/dispatch"
    chmod +x "$tmp/fake/dispatch"
    export HPC_BATCH_CLIENT_CONFIG=/dev/null HPC_BATCH_BACKEND=local
    . "$src/packaging/bash-completion/dispatch"
    expect_completion "attach drain hold info job kill list new output release resume wait" dispatch ""
    expect_completion "--help --version" dispatch --
    expect_completion "--numa-local --numa-local-gpu --numa-local-mem" dispatch new --cpu 2 --nu
    expect_completion "NODE NV PHB PIX PXB" dispatch new --gpu-link ""
    expect_completion "" dispatch new --max-time ""
    expect_completion "--all --finished --help --json --long" dispatch list --
    expect_completion "12 15 7" "$tmp/fake/dispatch" kill ""
    expect_completion "12 15 7" "$tmp/fake/dispatch" release 12 ""
    expect_completion "7" "$tmp/fake/dispatch" attach 7
    expect_completion "12 15" "$tmp/fake/dispatch" output ""
    expect_completion "12 15 7" "$tmp/fake/dispatch" new --after ""
    expect_completion "max-time" "$tmp/fake/dispatch" job 12 ""
    expect_completion "add get set" dispatch job 12 max-time ""
    expect_completion "--after --after-any" dispatch new --aft
    expect_completion "--no-output --notify" dispatch new --no
    expect_completion "12 15 7" "$tmp/fake/dispatch" new --after ""
    expect_completion "--timeout" dispatch wait 7 --t
    expect_completion "--help --json" dispatch info --
    HPC_BATCH_BACKEND=slurm expect_completion "attach drain hold info job kill list new output release resume wait" dispatch ""
    exit $failed
  ) || failed=1
}

# The broker account check (packaging/broker-account.sh) against a fake
# getent and login.defs.
check_broker_account() {
  (
    . "$src/packaging/broker-account.sh"
    printf 'SYS_UID_MAX\t999\n' > "$tmp/login.defs"
    export HPCB_LOGIN_DEFS=$tmp/login.defs
    getent() { [ -n "$account" ] && echo "$account"; }
    account="" got=$(hpcb_broker_account_problem)
    [ -z "$got" ] || fail "no account: '$got'"
    account="hpc-batch:x:998:998::/var/lib/hpc-batch/broker:/usr/sbin/nologin" got=$(hpcb_broker_account_problem)
    [ -z "$got" ] || fail "a system account: '$got'"
    account="hpc-batch:x:1001:1001:Hpc Batch:/home/hpc-batch:/bin/bash" got=$(hpcb_broker_account_problem)
    case $got in *"ordinary account 'hpc-batch' (uid 1001, above SYS_UID_MAX 999)"*) ;;
      *) fail "an ordinary account: '$got'";; esac
    HPCB_LOGIN_DEFS=$tmp/missing got=$(hpcb_broker_account_problem) || fail "no login.defs: it failed"
    case $got in *"(uid 1001, above SYS_UID_MAX 999)"*) ;; *) fail "no login.defs: '$got'";; esac
    exit $failed
  ) || failed=1
}

case $what in
  tree)
    "$cmake" --install "$build" --prefix "$tmp/prefix" > "$tmp/log" || { cat "$tmp/log"; fail "cmake --install --prefix"; exit 1; }
    check_tree "$tmp/prefix" "$tmp/prefix"
    check "hpc-batchd runs through its link" "$tmp/prefix/$SBINDIR/hpc-batchd" --version
    DESTDIR=$tmp/stage "$cmake" --install "$build" --prefix /usr > "$tmp/log" || { cat "$tmp/log"; fail "DESTDIR= cmake --install --prefix /usr"; exit 1; }
    check_tree "$tmp/stage/usr" /usr
    check_docs
    check_completion
    check_broker_account
    ;;
  deb)
    command -v dpkg-deb >/dev/null || { echo "no dpkg-deb: skipped"; exit 77; }
    cpack=$(dirname "$cmake")/cpack
    (cd "$build" && "$cpack" -G DEB -B "$tmp/pkg") > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "cpack -G DEB"; exit 1; }
    deb=$(ls "$tmp"/pkg/hpc-batch_*.deb 2>/dev/null | head -n 1)
    [ -n "$deb" ] || { cat "$tmp/log"; fail "cpack made no hpc-batch_*.deb"; exit 1; }
    echo "$(basename "$deb"): $(du -k "$deb" | cut -f1) KiB"
    dpkg-deb -I "$deb" control | sed 's/^/  /'
    depends=$(dpkg-deb -f "$deb" Depends)
    # libcap-ng0 only when the executor is linked dynamically (a release
    # build carries it): the broker's libseccomp2 and libc6 are always there.
    for dep in libseccomp2 libc6 systemd-sysusers systemd-tmpfiles; do
      grep -qE "(^|, )$dep( |,|$)" <<< "$depends" || fail "Depends lacks $dep: $depends"
    done
    [ "$(dpkg-deb -f "$deb" Recommends)" = bash-completion ] || fail "Recommends is not bash-completion"
    maintainer=$(dpkg-deb -f "$deb" Maintainer)
    case $maintainer in *@localhost* | "") fail "no real Maintainer: '$maintainer'";; esac
    mkdir "$tmp/control"
    dpkg-deb -e "$deb" "$tmp/control"
    for s in postinst prerm postrm; do
      check "$s is executable" test -x "$tmp/control/$s"
      check "$s parses under sh" sh -n "$tmp/control/$s"
    done
    check "md5sums are there" test -s "$tmp/control/md5sums"
    check "postinst runs systemd-sysusers" grep -q "systemd-sysusers .*hpc-batch.conf" "$tmp/control/postinst"
    check "postinst runs systemd-tmpfiles" grep -q "systemd-tmpfiles .*--create hpc-batch.conf" "$tmp/control/postinst"
    ! grep -vE '^[[:space:]]*(#|echo )' "$tmp/control/postinst" | grep -qE "systemctl .*(enable|start)" ||
      fail "postinst enables or starts the service"
    check "postrm purges the state" grep -q "hpcb_purge_state$" "$tmp/control/postrm"
    dpkg-deb -x "$deb" "$tmp/root"
    check_tree "$tmp/root/usr" /usr
    owners=$(dpkg-deb -c "$deb" | awk '{ print $2 }' | sort -u)
    [ "$owners" = root/root ] || fail "files not owned by root/root: $owners"
    check "the packaged binaries are stripped" \
      sh -c "! file -L '$tmp/root/usr/$DAEMONDIR/hpc-batchd' | grep -q 'not stripped'"
    # Debian's own package checks: no error and no warning (the overrides,
    # each with its reason, are in packaging/debian/lintian-overrides).
    if command -v lintian >/dev/null; then
      lintian --fail-on error,warning --tag-display-limit 0 "$deb" > "$tmp/lintian" 2>&1 ||
        fail "lintian:
$(grep -v 'running with root privileges' "$tmp/lintian")"
    elif [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
      fail "no lintian (scripts/install-deps.sh installs it)"
    else
      echo "no lintian: its check skipped"
    fi
    ;;
esac
exit $failed

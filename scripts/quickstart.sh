#!/usr/bin/env bash
# Runs one job (`echo hello`) end to end on the embedded default: a
# user-mode daemon (--no-cgroups) on scratch paths, no systemd. It installs
# only what building needs, builds only the four programs (not the tests;
# scripts/test.sh builds the rest into the same build/), and runs them from
# a copy in the scratch directory laid out as installed (the daemon's roles
# beside hpc-batchd). As root it runs the daemon and the client as
# `nobody`, since the daemon never runs jobs as uid 0. Everything it starts
# is stopped by pid before it exits. Prints its own time.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
scripts/install-deps.sh --build-only
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build hpc-batchd hpc-batch-executor hpc-batch-broker hpc-batch-as-user dispatch >/dev/null

scratch=$(mktemp -d /tmp/hpc-batch-quickstart.XXXXXX)
chmod 0755 "$scratch"
mkdir -p "$scratch/work" "$scratch/prefix/sbin" "$scratch/prefix/bin"
cp build/bin/hpc-batchd build/bin/hpc-batch-executor build/bin/hpc-batch-broker \
  build/bin/hpc-batch-as-user "$scratch/prefix/sbin/"
cp build/bin/dispatch "$scratch/prefix/bin/"

as_user=()
if [ "$(id -u)" -eq 0 ]; then
  chown -R nobody:nogroup "$scratch"
  as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi

daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid"
    for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

export HPC_BATCH_SOCKET="$scratch/sock"
"${as_user[@]}" "$scratch/prefix/sbin/hpc-batchd" --no-cgroups --socket "$scratch/sock" \
    --state-dir "$scratch/state" --dev-dir "$scratch/dev" --max-lifetime 1h \
    2>"$scratch/daemon.log" &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$scratch/sock" ] && break; sleep 0.1; done
[ -S "$scratch/sock" ] || { cat "$scratch/daemon.log"; echo "daemon did not start" >&2; exit 1; }

cd "$scratch/work"
"${as_user[@]}" "$scratch/prefix/bin/dispatch" new -- echo hello
for _ in $(seq 100); do [ -s output.1.log ] && break; sleep 0.1; done
echo "--- output.1.log:"
cat output.1.log
echo "--- dispatch list --finished:"
"${as_user[@]}" "$scratch/prefix/bin/dispatch" list --finished
grep -qx hello output.1.log
echo "quickstart: ok in $((SECONDS - start)) s"

#!/usr/bin/env bash
# scripts/root-size.sh must be able to fail: with a budget of one line each
# it exits 1 and names all three budgets; with scripts/root-budget it
# passes (the same check scripts/test.sh makes after the build).
#   tests/root_size_test.sh SCRIPT BUILD_DIR
set -uo pipefail
script=$1 build=$2
unset ROOT_BUDGET_TOTAL ROOT_BUDGET_EXECUTOR ROOT_BUDGET_LAUNCHER

out=$(ROOT_BUDGET_TOTAL=1 ROOT_BUDGET_EXECUTOR=1 ROOT_BUDGET_LAUNCHER=1 "$script" "$build" 2>&1 >/dev/null)
rc=$?
echo "$out"
[ "$rc" -eq 1 ] || { echo "FAIL: over budget exited $rc, not 1"; exit 1; }
for what in 'root total' executor/ launcher/; do
  grep -qx "root-size: $what [0-9,]* lines is over the budget of 1" <<<"$out" ||
    { echo "FAIL: no over-budget message for $what"; exit 1; }
done

"$script" "$build" | tail -n 4 || { echo "FAIL: over the checked-in budget"; exit 1; }

#!/usr/bin/env bash
# Lint checks: clang-format over every C++ file, untracked ones included
# (format), and clang-tidy, with the repository's .clang-tidy, over every
# non-test source (tidy) or over those changed since the merge base with
# main, uncommitted changes included (tidy-changed: the fast tier's).
#
#   scripts/lint.sh [format|tidy|tidy-changed|all] [BUILD_DIR]
#
# No mode means format and tidy. clang-tidy reads BUILD_DIR/compile_commands.json
# (default build/, which scripts/build.sh makes); LINT_JOBS overrides the
# number of parallel clang-tidy processes (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=all
case "${1:-}" in
  format | tidy | tidy-changed | all) mode=$1; shift ;;
esac
build_dir=${1:-build}
build_dir=${build_dir%/}

check_format() {
  local start=$SECONDS files=() bad=()
  mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cc' '*.h')
  # Eight files per clang-format run, one run per core.
  mapfile -t bad < <(printf '%s\0' "${files[@]}" |
    xargs -0 -n 8 -P "$(nproc)" sh -c \
      'for f; do clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"; done' sh |
    sort)
  if ((${#bad[@]})); then
    printf '  %s\n' "${bad[@]}"
    echo "format: FAILED: ${#bad[@]} of ${#files[@]} files differ from clang-format; run scripts/format.sh ($((SECONDS - start)) s)"
    return 1
  fi
  echo "format: ok, ${#files[@]} files ($((SECONDS - start)) s)"
}

tidy_sources=('broker/*.cc' 'executor/*.cc' 'launcher/*.cc' 'as_user/*.cc' 'protocol/*.cc' 'common/*.cc'
              'client/*.cc')

check_tidy() {
  local start=$SECONDS db="$build_dir/compile_commands.json" sources=() log
  if [ ! -f "$db" ]; then
    echo "tidy: FAILED: no $db; configure and build first (scripts/build.sh)" >&2
    return 1
  fi
  if [ "${1:-}" = changed ]; then
    local base
    base=$(git merge-base HEAD main 2>/dev/null || git rev-parse HEAD)
    mapfile -t sources < <({ git diff --name-only --diff-filter=d "$base" -- "${tidy_sources[@]}"
                             git ls-files --others --exclude-standard "${tidy_sources[@]}"; } |
                           sort -u)
    if ((${#sources[@]} == 0)); then
      echo "tidy: ok, no source changed since $(git rev-parse --short "$base")"
      return 0
    fi
  else
    mapfile -t sources < <(git ls-files "${tidy_sources[@]}")
  fi
  # run-clang-tidy silently skips a file the database lacks: refuse that.
  local missing=()
  mapfile -t missing < <(python3 - "$db" "${sources[@]}" <<'EOF'
import json, os, sys
db = {os.path.realpath(os.path.join(e["directory"], e["file"])) for e in json.load(open(sys.argv[1]))}
for f in sys.argv[2:]:
    if os.path.realpath(f) not in db:
        print(f)
EOF
  )
  if ((${#missing[@]})); then
    printf '  %s\n' "${missing[@]}"
    echo "tidy: FAILED: the files above are not in $db (reconfigure the build)" >&2
    return 1
  fi
  # run-clang-tidy takes regular expressions matched against the database's
  # paths; the sources' names hold no special character but the dot.
  local patterns=()
  for f in "${sources[@]}"; do patterns+=("/${f//./\\.}\$"); done
  log=$(mktemp /tmp/hpcb-tidy.XXXXXX)
  if run-clang-tidy -p "$build_dir" -j"${LINT_JOBS:-$(nproc)}" -quiet "${patterns[@]}" \
      >"$log" 2>&1; then
    echo "tidy: ok, ${#sources[@]} files ($((SECONDS - start)) s)"
    rm -f "$log"
    return 0
  fi
  # A header's finding repeats for every file including it: show each once.
  local findings
  findings=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error): ' |
             sed "s|^$PWD/||" | sort -u || true)
  if [ -n "$findings" ]; then
    echo "$findings"
  else
    tail -n 40 "$log"
  fi
  echo "tidy: FAILED: $(grep -c . <<<"$findings") findings in ${#sources[@]} files; full output in $log ($((SECONDS - start)) s)"
  return 1
}

status=0
case "$mode" in
  format) check_format || status=1 ;;
  tidy) check_tidy || status=1 ;;
  tidy-changed) check_tidy changed || status=1 ;;
  all) check_format || status=1; check_tidy || status=1 ;;
esac
exit "$status"

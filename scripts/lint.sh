#!/usr/bin/env bash
# Lint checks: clang-format over every C++ file (format) and clang-tidy, with
# the repository's .clang-tidy, over every non-test source (tidy).
#
#   scripts/lint.sh [format|tidy|all] [BUILD_DIR]
#
# No mode means both. clang-tidy reads BUILD_DIR/compile_commands.json
# (default build/, which scripts/build.sh makes); LINT_JOBS overrides the
# number of parallel clang-tidy processes (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=all
case "${1:-}" in
  format | tidy | all) mode=$1; shift ;;
esac
build_dir=${1:-build}
build_dir=${build_dir%/}

check_format() {
  local start=$SECONDS files=() bad=()
  mapfile -t files < <(git ls-files '*.cc' '*.h')
  for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if ((${#bad[@]})); then
    printf '  %s\n' "${bad[@]}"
    echo "format: FAILED: ${#bad[@]} of ${#files[@]} files differ from clang-format; run scripts/format.sh ($((SECONDS - start)) s)"
    return 1
  fi
  echo "format: ok, ${#files[@]} files ($((SECONDS - start)) s)"
}

check_tidy() {
  local start=$SECONDS db="$build_dir/compile_commands.json" sources=() log
  if [ ! -f "$db" ]; then
    echo "tidy: FAILED: no $db; configure and build first (scripts/build.sh)" >&2
    return 1
  fi
  mapfile -t sources < <(git ls-files 'broker/*.cc' 'executor/*.cc' 'launcher/*.cc' \
                                       'protocol/*.cc' 'client/*.cc')
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
if [ "$mode" != tidy ]; then check_format || status=1; fi
if [ "$mode" != format ]; then check_tidy || status=1; fi
exit "$status"

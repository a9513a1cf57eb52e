#!/usr/bin/env bash
# The root side's size, from the build's own records: every object on the
# link lines of hpc-batchd (the launcher) and hpc-batch-executor, objects
# inside the project's static libraries included, and for each object its
# source and the headers the compiler read (ninja's deps log). Files inside
# the source tree count, minus tests/, fuzz/ and bench/; lines are counted
# as /work/shared/tools/root-lines.py does (non-blank, not // comments, not
# inside /* */). Prints one row per file, then totals per top folder, and
# fails when a budget in scripts/root-budget is exceeded (override with
# ROOT_BUDGET_TOTAL, ROOT_BUDGET_EXECUTOR, ROOT_BUDGET_LAUNCHER), or when a
# root binary is built from the client, the client protocol or CLI11.
#
#   scripts/root-size.sh [--markdown] [BUILD_DIR]   (BUILD_DIR defaults to build)
#
# --markdown prints docs/security/root-size.md whole, so
#   scripts/root-size.sh --markdown > docs/security/root-size.md
# regenerates that page. Exit 1: over budget; 2: no answer (not a Ninja
# build, not built yet, no budget).
#
# The archives count whole: the linker takes only the members something
# calls, so this is an upper bound on what the binaries carry, and the
# bound an auditor reads (a member dropped today is linked by tomorrow's
# call).
set -euo pipefail
budget_file="$(cd "$(dirname "$0")" && pwd)/root-budget"
markdown=0
if [ "${1:-}" = --markdown ]; then markdown=1; shift; fi
build="${1:-build}"
if [ ! -f "$build/build.ninja" ] || [ ! -f "$build/.ninja_deps" ]; then
  echo "root-size: $build is not a built Ninja build directory" >&2
  exit 2
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
export ROOT_SIZE_BUILD="$build" ROOT_SIZE_BUDGET_FILE="$budget_file" ROOT_SIZE_MARKDOWN="$markdown"
export ROOT_SIZE_REPO="$repo"
exec python3 - <<'EOF'
import os, re, subprocess, sys

build = os.path.realpath(os.environ["ROOT_SIZE_BUILD"])
# The CMake targets (launcher/CMakeLists.txt, executor/CMakeLists.txt), by
# the short name the table's third column uses.
BINARIES = {"launcher": "hpc-batchd", "executor": "hpc-batch-executor"}
ORDER = ["launcher", "executor", "protocol", "common"]  # most privileged first, then what both share
SKIP = {"tests", "fuzz", "bench"}

def die(msg):
    print("root-size: " + msg, file=sys.stderr)
    sys.exit(2)

# Any exception is "no answer" (2), never "over budget" (1).
sys.excepthook = lambda kind, value, tb: die(f"{kind.__name__}: {value}")

def ninja(*args):
    r = subprocess.run(["ninja", "-C", build, "-t", *args], capture_output=True, text=True)
    if r.returncode != 0:
        die(f"ninja -t {' '.join(args[:2])}...: {r.stderr.strip()}")
    return r.stdout

cache = open(os.path.join(build, "CMakeCache.txt")).read()
m = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache, re.M)
if not m:
    die("no CMAKE_HOME_DIRECTORY in " + build + "/CMakeCache.txt")
src = os.path.realpath(m.group(1))
if src != os.path.realpath(os.environ["ROOT_SIZE_REPO"]):
    die(f"{build} is a build of {src}, not of this tree")

def inputs(target):
    """The explicit and implicit inputs of the edge that builds target (not
    the order-only ones after '||': they order the build, nothing is linked
    from them), and whether that edge is a phony."""
    rule, found, section = None, [], None
    for line in ninja("query", target).splitlines():
        if line.startswith("  input: "):
            rule, section = line.split(": ", 1)[1], "in"
        elif line.startswith("  ") and not line.startswith("    "):
            section = None
        elif section == "in" and line.startswith("    "):
            item = line.strip()
            if item.startswith("|| "):
                continue
            found.append(item[2:] if item.startswith("| ") else item)
    return rule == "phony", found

def objects(target):
    phony, ins = inputs(target)
    objs = []
    for i in ins:
        if phony:
            objs += objects(i)
        elif i.endswith(".o"):
            objs.append(i)
        elif i.endswith(".a") and not os.path.isabs(i):
            # A relative archive is one this build makes: one of ours.
            # System archives (libseccomp.a) come by absolute path.
            objs += objects(i)
        elif not os.path.isabs(i) or os.path.realpath(i).startswith(build + os.sep):
            # Something of ours this script cannot see into (a shared
            # library, a linker script): counting nothing for it would pass.
            die(f"{target} is linked from {i}, which this script cannot count")
    return objs

def deps(objs):
    """Each object's source and every header the compiler read, as recorded
    in .ninja_deps at its last compile (all in one call: every ninja call
    loads the whole manifest)."""
    found, cur = {}, None
    for line in ninja("deps", *objs).splitlines():
        m = re.match(r"(\S.*): (#deps|deps not found)", line)
        if m:
            valid = m.group(2) == "#deps" and line.rstrip().endswith("(VALID)")
            cur = found[m.group(1)] = [] if valid else None
        elif line.strip():
            if cur is not None: cur.append(line.strip())
    for obj in objs:
        if found.get(obj) is None:
            die(f"no up-to-date dependency record for {obj}: build {build} first")
    return found

def top(p):
    return p.split(os.sep)[0]

def ours(path):
    """The path relative to the source tree, or None for a system header,
    a generated file in the build, or a test, fuzz or bench file."""
    p = os.path.realpath(os.path.join(build, path))
    if p == build or p.startswith(build + os.sep) or not p.startswith(src + os.sep):
        return None
    rel = os.path.relpath(p, src)
    return None if rel.split(os.sep)[0] in SKIP else rel

# What a root binary must not be built from: the client protocol beyond
# what root reads from a user (protocol/user_requests.h) and the client.
def forbidden(rel):
    return rel == os.path.join("protocol", "client_messages.h") or top(rel) == "client"

linked_by = {}  # file -> set of binaries
refused = []    # (binary, object, forbidden file)
cli11 = {}      # object -> binaries whose objects read CLI11's headers
for name, target in BINARIES.items():
    objs = objects(target)
    if not objs:
        die(f"ninja knows no objects for {target}: is {build} this project's build?")
    for obj, read in deps(objs).items():
        if any(os.sep + "CLI" + os.sep in r for r in read):
            cli11.setdefault(obj, set()).add(target)
        for rel in filter(None, map(ours, read)):
            linked_by.setdefault(rel, set()).add(name)
            if forbidden(rel):
                refused.append((target, obj, rel))

def code_lines(p):
    # Deliberately root-lines.py's rules, quirks included (a line that opens
    # with a one-line /* */ is skipped whole), so the two tools agree.
    n, inblock = 0, False
    for line in open(os.path.join(src, p), errors="replace"):
        s = line.strip()
        if inblock:
            if "*/" in s: inblock = False
            continue
        if not s or s.startswith("//"): continue
        if s.startswith("/*"):
            if "*/" not in s: inblock = True
            continue
        n += 1
    return n

def rank(folder):
    return (ORDER.index(folder) if folder in ORDER else len(ORDER), folder)

def reading_order(p):
    # Folder by privilege, then directory, then each header just before its .cc.
    d, f = os.path.split(p)
    stem, ext = os.path.splitext(f)
    return (rank(top(p)), d, stem, ext != ".h")

rows = [(p, code_lines(p), "both" if len(b) == 2 else next(iter(b)))
        for p, b in sorted(linked_by.items(), key=lambda kv: reading_order(kv[0]))]
folders = {}
for p, n, _ in rows:
    folders[top(p)] = folders.get(top(p), 0) + n
per_binary = {b: sum(n for p, n, _ in rows if b in linked_by[p]) for b in BINARIES}
total = sum(folders.values())

budgets = {}
with open(os.environ["ROOT_SIZE_BUDGET_FILE"]) as f:
    for line in f:
        words = line.split("#", 1)[0].split()
        if len(words) == 2 and words[1].isdigit():
            budgets[words[0]] = int(words[1])
        elif words:
            die(f"not 'name lines' in {f.name}: {line.strip()}")
for key in ("total", "executor", "launcher"):
    env = os.environ.get("ROOT_BUDGET_" + key.upper(), "")
    if env.isdigit():
        budgets[key] = int(env)
    elif env or key not in budgets:
        # No budget must not read as "within budget".
        die(f"no {key} budget: ROOT_BUDGET_{key.upper()}={env!r}, {f.name}")
over = [(label, n, budgets[key]) for key, label, n in
        (("total", "root total", total),
         ("executor", "executor/", folders.get("executor", 0)),
         ("launcher", "launcher/", folders.get("launcher", 0))) if n > budgets[key]]

folder_order = sorted(folders, key=rank)
if os.environ["ROOT_SIZE_MARKDOWN"] == "1":
    print(f"""# Root-side size

What an auditor of the root side has to read: every file of this
repository compiled into `hpc-batchd` (the launcher) or
`hpc-batch-executor`, found from the build's dependency records: the
objects on each program's link line, those in the project's static
libraries included, and for each object its source and the headers the
compiler read. A static library counts whole, though the linker takes
only the members something calls. Tests, fuzzers and benchmarks are not
counted. Lines are code lines: not blank, not a `//` comment, not inside
`/* */`.

The rows are in the auditor's reading order: the launcher (full root,
unconfined), then the executor (root, confined), then the protocol both
speak, then the helpers both use (`common/base`, `common/host`); within a
folder alphabetically, each header just before its `.cc`.
The last column says which program links the file.

Budget (`scripts/root-budget`, checked by `scripts/test.sh`): total
{budgets['total']:,}, executor/ {budgets['executor']:,}, launcher/ {budgets['launcher']:,}.
It is a ratchet, lowered as code is cut, towards the target of total
≤ 4,000, executor/ ≤ 1,500, launcher/ ≤ 1,500 ("A root side an auditor
reads in an afternoon"). `scripts/root-size.sh --markdown` regenerates
this page.

| File | Lines | Linked by |
| --- | ---: | --- |""")
    for p, n, b in rows:
        print(f"| `{p}` | {n:,} | {b} |")
    for t in folder_order:
        print(f"| **{t}/** | **{folders[t]:,}** | |")
    print(f"| **root total** | **{total:,}** | |")
    print("\nOf these lines, " + " and ".join(f"`{BINARIES[b]}` is built from {n:,}"
                                            for b, n in per_binary.items()) + ".")
else:
    width = max(len(p) for p, _, _ in rows)
    print(f"{'file':<{width}}  {'lines':>6}  linked by")
    for p, n, b in rows:
        print(f"{p:<{width}}  {n:>6,}  {b}")
    print()
    for t in folder_order:
        print(f"{t + '/':<{width}}  {folders[t]:>6,}")
    print(f"{'root total':<{width}}  {total:>6,}  ({len(rows)} files; "
          + ", ".join(f"{BINARIES[b]} {n:,}" for b, n in per_binary.items()) + ")")
# The flags are the broker's to parse (launcher/root_flags.h): no root
# binary is built from a flag library.
for obj, binaries in sorted(cli11.items()):
    print(f"root-size: {', '.join(sorted(binaries))} is built from CLI11 (read by {obj}); "
          "root binaries must not parse flags with it", file=sys.stderr)
for target, obj, rel in refused:
    print(f"root-size: {target} is built from {rel} (read by {obj}); "
          "root binaries must not compile the client protocol or the client", file=sys.stderr)
for label, n, limit in over:
    print(f"root-size: {label} {n:,} lines is over the budget of {limit:,}", file=sys.stderr)
sys.exit(1 if over or refused or cli11 else 0)
EOF

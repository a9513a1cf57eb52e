#include "executor/confine.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <set>

#include "common/base/unique_fd.h"
#include "common/host/unlisted_call_action.h"
#include "protocol/framing.h"

#include <cap-ng.h>

namespace hpcb::executor {
namespace {

// Landlock ABI 3 (Linux 6.2); older headers (Debian 12's) lack the name.
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
constexpr __u64 kLandlockTruncate = LANDLOCK_ACCESS_FS_TRUNCATE;
#else
constexpr __u64 kLandlockTruncate = 1ULL << 14;
#endif

struct CtxDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};
using SeccompCtx = std::unique_ptr<void, CtxDeleter>;

Result<void> AddRule(scmp_filter_ctx ctx, uint32_t action, const char* name,
                     std::vector<struct scmp_arg_cmp> args = {}) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return Ok();  // not on this architecture
  int rc = seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(args.size()),
                                  args.empty() ? nullptr : args.data());
  if (rc != 0) return Error::FromErrno(-rc, std::string("seccomp_rule_add ") + name);
  return Ok();
}

// SCMP_CMP's compound literal is C99, not C++: built field by field.
struct scmp_arg_cmp ArgEquals(unsigned arg, scmp_datum_t value) {
  struct scmp_arg_cmp cmp {};
  cmp.arg = arg;
  cmp.op = SCMP_CMP_EQ;
  cmp.datum_a = value;
  return cmp;
}

Result<SeccompCtx> BuildFilter() {
  SeccompCtx ctx(seccomp_init(host::kUnlistedCallAction));
  if (!ctx) return Error(ErrorCode::kInternal, "seccomp_init failed");
  const std::set<std::string> limited = {"kill", "fcntl"};
  for (const AllowedSyscall& call : SeccompAllowList()) {
    if (!limited.contains(call.name)) HPCB_TRY(AddRule(ctx.get(), SCMP_ACT_ALLOW, call.name));
  }
  // Signals: only ending a job (SIGTERM, then SIGKILL).
  for (int sig : {SIGTERM, SIGKILL}) {
    HPCB_TRY(
        AddRule(ctx.get(), SCMP_ACT_ALLOW, "kill", {ArgEquals(1, static_cast<scmp_datum_t>(sig))}));
  }
  // fcntl: flags of an fd we opened, and a private duplicate for readdir.
  for (int cmd : {F_GETFL, F_SETFL, F_GETFD, F_SETFD, F_DUPFD_CLOEXEC}) {
    HPCB_TRY(AddRule(ctx.get(), SCMP_ACT_ALLOW, "fcntl",
                     {ArgEquals(1, static_cast<scmp_datum_t>(cmd))}));
  }
  return ctx;
}

}  // namespace

const std::vector<AllowedSyscall>& SeccompAllowList() {
  // No execve, no set*id, no mount, no module/kexec/bpf/ptrace/unshare/setns,
  // no clone of any kind: the executor never starts a process.
  static const std::vector<AllowedSyscall> kList = {
      {"read", "launch specs, run records, /proc, cgroup files"},
      {"write", "spec and info.json temp files, output lines, cgroup files, log lines"},
      {"openat", "every file and directory, by path or through a job dir's fd"},
      {"close", "every fd it opens or is passed"},
      {"newfstatat", "checking what an opened fd is (a job buffer, a job dir) before use"},
      {"lseek", "glibc reading /etc/localtime for the time in a log line"},
      {"getdents64", "listing specs, job dirs, dev entries and job cgroups"},
      {"access", "whether a job dir or a set-aside spec exists"},
      {"statfs", "room left in the state directory before a start"},
      {"mkdir", "job directories and job cgroups"},
      {"rmdir", "removing job cgroups and emptied job directories"},
      {"unlink", "specs, run records, dev entries of forgotten jobs; an emptied old journal"},
      {"unlinkat", "a delivered buffer, temp files, a forgotten job's own files, via the dir's fd"},
      {"rename", "a spec or the id high-water mark into place"},
      {"renameat", "info.json into place through the job dir's fd"},
      {"symlink", "the job's /dev inspection entry"},
      {"fchown", "handing a job's dir and files to its user, through their fds"},
      {"fchmod", "modes of the files it creates, through their fds"},
      {"fsync",
       "a spec file before its rename; the specs directory before a loop turn's answers; the "
       "high-water mark"},
      {"fcntl", "fd flags (O_NONBLOCK of a buffer just checked), an fd copy for readdir"},
      {"kill", "SIGTERM and SIGKILL to a job's process group"},
      {"poll", "the loop over the broker's and launcher's channels"},
      {"recvmsg", "messages (and passed fds) on both channels"},
      {"sendmsg", "messages (and passed fds) on both channels"},
      {"recvfrom", "taking a client's submission frame off its forwarded socket"},
      {"getsockopt", "SO_PEERCRED and SO_TYPE of a forwarded client socket"},
      {"getsockname", "that a forwarded socket was accepted on the daemon's socket"},
      {"getppid", "whether an adopted job's shepherd is the current launcher's child"},
      {"brk", "the heap growing past what start-up left (many queued jobs)", true},
      {"mmap", "allocations too large for the heap (a long output line, a big spec)", true},
      {"munmap", "freeing those", true},
      {"mremap", "glibc's realloc growing one of those (parsing an array's index list)", true},
      {"exit_group", "leaving when the broker goes away"},
      {"restart_syscall", "the kernel resuming a poll a stop signal interrupted", true},
      {"futex", "glibc's once-only set-up on the first C++ exception (a malformed message)", true},
      {"clock_gettime",
       "the vDSO falling back to the kernel on a clocksource (hpet, acpi_pm) it cannot read", true},
      {"gettimeofday", "the same fallback for a log line's wall-clock time", true},
  };
  return kList;
}

Result<void> PrintSeccompPolicy(int fd) {
  HPCB_ASSIGN_OR_RETURN(SeccompCtx ctx, BuildFilter());
  int rc = seccomp_export_pfc(ctx.get(), fd);
  if (rc != 0) return Error::FromErrno(-rc, "seccomp_export_pfc");
  return Ok();
}

Result<void> PrintAllowList(int fd) {
  std::string text;
  for (const AllowedSyscall& call : SeccompAllowList()) {
    text +=
        std::string(call.name) + "\t" + (call.rare ? "rare" : "needed") + "\t" + call.why + "\n";
  }
  return protocol::WriteAllToFile(fd, text);
}

Result<void> ApplySeccomp() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return Error::FromErrno(errno, "PR_SET_NO_NEW_PRIVS");
  }
  HPCB_ASSIGN_OR_RETURN(SeccompCtx ctx, BuildFilter());
  int rc = seccomp_load(ctx.get());
  if (rc != 0) return Error::FromErrno(-rc, "seccomp_load");
  return Ok();
}

Result<void> ReduceCapabilities() {
  if (::geteuid() != 0) return Ok();
  capng_clear(CAPNG_SELECT_ALL);
  int rc = capng_updatev(CAPNG_ADD, static_cast<capng_type_t>(CAPNG_EFFECTIVE | CAPNG_PERMITTED),
                         CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_KILL, -1);
  if (rc != 0) return Error(ErrorCode::kInternal, "capng_updatev failed");
  rc = capng_apply(CAPNG_SELECT_ALL);
  if (rc != 0)
    return Error(ErrorCode::kInternal, "capng_apply failed (" + std::to_string(rc) + ")");
  return Ok();
}

Result<bool> ApplyLandlock(const ConfinePaths& paths) {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return false;
  const __u64 read_access = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  __u64 write_access = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                       LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |
                       LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SYM;
  __u64 handled = read_access | write_access | LANDLOCK_ACCESS_FS_EXECUTE |
                  LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                  LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SOCK;
  if (abi >= 2) {
    handled |= LANDLOCK_ACCESS_FS_REFER;
    write_access |= LANDLOCK_ACCESS_FS_REFER;
  }
  if (abi >= 3) {
    // Without it truncate(2) is outside Landlock's reach: a file under
    // /usr could be emptied though it may not be written.
    handled |= kLandlockTruncate;
    write_access |= kLandlockTruncate;
  }
  struct landlock_ruleset_attr attr {};
  attr.handled_access_fs = handled;
  UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0)));
  if (!ruleset.valid()) return Error::FromErrno(errno, "landlock_create_ruleset");
  auto add = [&](const std::string& path, __u64 access) -> Result<void> {
    UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
    if (!fd.valid()) return Ok();  // absent paths simply get no access
    struct landlock_path_beneath_attr rule {};
    rule.allowed_access = access;
    rule.parent_fd = fd.get();
    if (::syscall(SYS_landlock_add_rule, ruleset.get(), LANDLOCK_RULE_PATH_BENEATH, &rule, 0) !=
        0) {
      // A regular file cannot take directory rights; retry with file rights.
      rule.allowed_access = access & (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE);
      if (::syscall(SYS_landlock_add_rule, ruleset.get(), LANDLOCK_RULE_PATH_BENEATH, &rule, 0) !=
          0) {
        return Error::FromErrno(errno, "landlock_add_rule " + path);
      }
    }
    return Ok();
  };
  for (const auto& p : paths.read_only)
    HPCB_TRY(add(p, read_access));
  for (const auto& p : paths.read_write)
    HPCB_TRY(add(p, read_access | write_access));
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Error::FromErrno(errno, "no_new_privs");
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
    return Error::FromErrno(errno, "landlock_restrict_self");
  }
  return true;
}

}  // namespace hpcb::executor

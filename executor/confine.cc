#include "executor/confine.h"

#include <cap-ng.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "protocol/base/unique_fd.h"

namespace hpcb::executor {
namespace {

struct CtxDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};
using SeccompCtx = std::unique_ptr<void, CtxDeleter>;

Result<SeccompCtx> BuildFilter() {
  SeccompCtx ctx(seccomp_init(SCMP_ACT_KILL_PROCESS));
  if (!ctx) return Error(ErrorCode::kInternal, "seccomp_init failed");
  for (const auto& name : SeccompAllowList()) {
    int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0);
    if (rc != 0) return Error::FromErrno(-rc, "seccomp_rule_add " + name);
  }
  // NSS may try nscd/sssd sockets: fail them cleanly instead of dying.
  for (const char* name : {"socket", "connect"}) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;
    int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EACCES), nr, 0);
    if (rc != 0) return Error::FromErrno(-rc, std::string("seccomp_rule_add ") + name);
  }
  return ctx;
}

}  // namespace

const std::vector<std::string>& SeccompAllowList() {
  // No execve/execveat, no set*uid/set*gid/setgroups, no mount/umount,
  // no module/kexec/bpf/ptrace/unshare/setns/clone of namespaces.
  static const std::vector<std::string> kList = {
      "read", "write", "pread64", "pwrite64", "readv", "writev", "close", "openat",
      "open", "fstat", "newfstatat", "stat", "lstat", "statx", "lseek", "getdents64",
      "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat",
      "renameat2", "symlink", "symlinkat", "readlink", "readlinkat", "fchown",
      "fchownat", "chown", "lchown", "fchmod", "fchmodat", "chmod", "access",
      "faccessat", "faccessat2", "fsync", "fdatasync", "ftruncate", "fcntl", "dup",
      "dup2", "dup3", "pipe2", "ioctl", "sendmsg", "recvmsg", "sendto", "recvfrom",
      "getsockopt", "getsockname", "poll", "ppoll", "kill", "brk", "mmap", "munmap", "mremap",
      "mprotect", "madvise", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn",
      "exit", "exit_group", "clock_gettime", "clock_nanosleep", "nanosleep",
      "gettimeofday", "time", "getpid", "gettid", "getuid", "geteuid", "getgid",
      "getegid", "getresuid", "getresgid", "getgroups", "futex", "getrandom",
      "uname", "sysinfo", "sched_getaffinity", "sched_yield", "prlimit64",
      "getrlimit", "set_robust_list", "rseq", "restart_syscall", "getcwd", "umask",
      "capget", "prctl", "close_range", "tgkill", "getppid", "fadvise64", "statfs", "fstatfs",
  };
  return kList;
}

Result<void> PrintSeccompPolicy(int fd) {
  HPCB_ASSIGN_OR_RETURN(SeccompCtx ctx, BuildFilter());
  int rc = seccomp_export_pfc(ctx.get(), fd);
  if (rc != 0) return Error::FromErrno(-rc, "seccomp_export_pfc");
  return Ok();
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
                         CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_KILL, -1);
  if (rc != 0) return Error(ErrorCode::kInternal, "capng_updatev failed");
  rc = capng_apply(CAPNG_SELECT_ALL);
  if (rc != 0) return Error(ErrorCode::kInternal, "capng_apply failed (" + std::to_string(rc) + ")");
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
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
  if (abi >= 3) {
    handled |= LANDLOCK_ACCESS_FS_TRUNCATE;
    write_access |= LANDLOCK_ACCESS_FS_TRUNCATE;
  }
#endif
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
    if (::syscall(SYS_landlock_add_rule, ruleset.get(), LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
      // A regular file cannot take directory rights; retry with file rights.
      rule.allowed_access = access & (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE);
      if (::syscall(SYS_landlock_add_rule, ruleset.get(), LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
        return Error::FromErrno(errno, "landlock_add_rule " + path);
      }
    }
    return Ok();
  };
  for (const auto& p : paths.read_only) HPCB_TRY(add(p, read_access));
  for (const auto& p : paths.read_write) HPCB_TRY(add(p, read_access | write_access));
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Error::FromErrno(errno, "no_new_privs");
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
    return Error::FromErrno(errno, "landlock_restrict_self");
  }
  return true;
}

}  // namespace hpcb::executor

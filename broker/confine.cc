#include "broker/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "common/host/unlisted_call_action.h"

namespace hpcb::broker {
namespace {

int LastCap() {
  int last = CAP_LAST_CAP;
  if (FILE* f = std::fopen("/proc/sys/kernel/cap_last_cap", "re")) {
    char text[32] = {};
    if (std::fgets(text, sizeof text, f) != nullptr) {
      char* end = nullptr;
      errno = 0;
      const long value = std::strtol(text, &end, 10);
      if (end != text && errno == 0 && value > 0 && value < 128) last = static_cast<int>(value);
    }
    (void)std::fclose(f);  // opened for reading: nothing to lose
  }
  return last;
}

}  // namespace

Result<ServiceUser> LookupServiceUser(const std::string& name) {
  std::vector<char> buffer(16384);
  struct passwd entry {};
  struct passwd* found = nullptr;
  if (getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr) {
    return Error(ErrorCode::kNotFound, "--broker-user '" + name +
                                           "' does not exist on this system; create it "
                                           "(see systemd/sysusers) or pass --broker-user");
  }
  if (entry.pw_uid == 0 || entry.pw_gid == 0) {
    return Error(ErrorCode::kInvalidArgument,
                 "--broker-user '" + name + "' is root; the broker must run unprivileged");
  }
  return ServiceUser{name, entry.pw_uid, entry.pw_gid};
}

Result<void> PrepareStateDir(const std::string& dir, const ServiceUser* owner) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Error::FromErrno(errno, "cannot create " + dir);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return Error::FromErrno(errno, "cannot stat " + dir);
  if (!S_ISDIR(st.st_mode)) {
    return Error(ErrorCode::kFailedPrecondition, dir + " is not a directory");
  }
  if (owner != nullptr && ::chown(dir.c_str(), owner->uid, owner->gid) != 0) {
    return Error::FromErrno(errno, "cannot chown " + dir);
  }
  if (::chmod(dir.c_str(), 0700) != 0) return Error::FromErrno(errno, "cannot chmod " + dir);
  return Ok();
}

Result<void> DropToUser(const ServiceUser& user) {
  const int last = LastCap();
  for (int cap = 0; cap <= last; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
      return Error::FromErrno(errno, "cannot drop capability " + std::to_string(cap));
    }
  }
  if (::setgroups(0, nullptr) != 0) return Error::FromErrno(errno, "setgroups");
  if (::setresgid(user.gid, user.gid, user.gid) != 0) return Error::FromErrno(errno, "setresgid");
  if (::setresuid(user.uid, user.uid, user.uid) != 0) return Error::FromErrno(errno, "setresuid");
  uid_t r = 0, e = 0, s = 0;
  gid_t rg = 0, eg = 0, sg = 0;
  if (::getresuid(&r, &e, &s) != 0 || r != user.uid || e != user.uid || s != user.uid ||
      ::getresgid(&rg, &eg, &sg) != 0 || rg != user.gid || eg != user.gid || sg != user.gid) {
    return Error(ErrorCode::kInternal, "identity did not change to " + user.name);
  }
  if (::setresuid(0, 0, 0) == 0) {
    return Error(ErrorCode::kInternal, "could regain root after dropping to " + user.name);
  }
  return Ok();
}

Result<void> ApplySeccomp() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return Error::FromErrno(errno, "PR_SET_NO_NEW_PRIVS");
  }
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(host::kUnlistedCallAction),
                                                       seccomp_release);
  if (!ctx) return Error(ErrorCode::kInternal, "seccomp_init failed");
  static const char* const kAllowed[] = {
      // I/O on descriptors we hold
      "read", "write", "readv", "writev", "pread64", "pwrite64", "close", "lseek", "fstat",
      "newfstatat", "statx", "stat", "lstat", "fcntl", "fsync", "fdatasync", "poll", "ppoll", "dup",
      "dup3",
      // sockets: clients, executor, and NSS lookups (nscd/systemd-userdb)
      "accept", "accept4", "recvmsg", "sendmsg", "recvfrom", "sendto", "getsockopt", "setsockopt",
      "socket", "connect", "shutdown", "getsockname", "getpeername",
      // the queue file and /etc/passwd, /etc/group
      "open", "openat", "rename", "renameat", "renameat2", "unlink", "unlinkat", "getdents64",
      "access", "faccessat", "faccessat2", "readlink", "readlinkat",
      // memory, time, signals, exit
      "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "futex", "clock_gettime",
      "clock_nanosleep", "nanosleep", "gettimeofday", "time", "rt_sigaction", "rt_sigprocmask",
      "rt_sigreturn", "sigaltstack", "restart_syscall", "exit", "exit_group", "tgkill", "getpid",
      "gettid", "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups",
      "getrandom", "uname", "sched_yield", "rseq", "set_robust_list", "prlimit64", "sysinfo",
      "umask", "fchmod"};
  for (const char* name : kAllowed) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0) != 0) {
      return Error(ErrorCode::kInternal, std::string("seccomp rule for ") + name + " failed");
    }
  }
  // NSS modules loaded lazily after confinement (libnss_systemd pulls in
  // libcap, whose constructor reads the bounding set) need this one prctl.
  // Spelled out: SCMP_A0() is a C compound literal, which clang refuses in C++.
  scmp_arg_cmp only_capbset_read{};
  only_capbset_read.arg = 0;
  only_capbset_read.op = SCMP_CMP_EQ;
  only_capbset_read.datum_a = PR_CAPBSET_READ;
  if (seccomp_rule_add_array(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1, &only_capbset_read) !=
      0) {
    return Error(ErrorCode::kInternal, "seccomp rule for prctl(PR_CAPBSET_READ) failed");
  }
  int rc = seccomp_load(ctx.get());
  if (rc != 0) return Error::FromErrno(-rc, "seccomp_load");
  return Ok();
}

}  // namespace hpcb::broker

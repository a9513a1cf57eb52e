#include "launcher/user_ops.h"

#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hpcb::launcher {

int DropIdentity(bool change, uid_t uid, gid_t gid, const gid_t* groups, int ngroups) {
  if (!change) return 0;
  if (uid == 0 || gid == 0) return EPERM;
  // From the id change on the user may signal this process, whose memory
  // is a copy of the launcher's: no signal may act on it before that
  // memory is sealed below (a core dump would carry it to disk or to a
  // crash handler). The job child unblocks just before its exec; a helper
  // never does.
  sigset_t all;
  sigfillset(&all);
  if (::sigprocmask(SIG_BLOCK, &all, nullptr) != 0) return errno;
  if (::setgroups(static_cast<size_t>(ngroups), groups) != 0) return errno;
  if (::setresgid(gid, gid, gid) != 0) return errno;
  if (::setresuid(uid, uid, uid) != 0) return errno;
  uid_t r, e, s;
  gid_t rg, eg, sg;
  if (::getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid) return EPERM;
  if (::getresgid(&rg, &eg, &sg) != 0 || rg != gid || eg != gid || sg != gid) return EPERM;
  // The id change left the memory as dumpable as fs.suid_dumpable says; 0
  // whatever that is, so the user can neither trace this process nor make
  // it dump core. An execve later gives the job's own image the usual
  // dumpability (launcher/dumpable_check.h says why 1 is refused anyway).
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return errno;
  if (::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) return EPERM;
  return 0;
}

Error SwitchUserError(const std::string& user, int err) {
  return Error(ErrorCode::kPermissionDenied,
               "cannot switch to user " + user + ": " + std::strerror(err));
}

Result<void> CheckIdentityAllowed(const protocol::UserIdentity& who, bool as_root) {
  if (as_root) {
    if (who.uid == 0 || who.gid == 0) {
      return Error(ErrorCode::kPermissionDenied, "refusing to act as uid 0 or gid 0");
    }
    for (auto g : who.groups) {
      if (g == 0) return Error(ErrorCode::kPermissionDenied, "refusing supplementary group 0");
    }
    return Ok();
  }
  if (who.uid != ::getuid()) {
    return Error(ErrorCode::kPermissionDenied, "user mode: only the daemon's own uid");
  }
  return Ok();
}

}  // namespace hpcb::launcher

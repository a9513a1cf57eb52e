// Confinement of the executor after start-up: no_new_privs, capabilities
// cut to the three it uses, Landlock (where the kernel has it) and a
// seccomp allow-list (default: kill the process). Never applied to the
// launcher: all of these are inherited by jobs.
#ifndef HPCB_EXECUTOR_CONFINE_H_
#define HPCB_EXECUTOR_CONFINE_H_

#include <string>
#include <vector>

#include "common/base/result.h"

namespace hpcb::executor {

struct ConfinePaths {
  std::vector<std::string> read_write;  // state dir, dev dir, cgroup tree
  std::vector<std::string> read_only;   // /etc (passwd, group), /proc, sysfs
};

// One syscall the executor may make once confined, and why it must.
struct AllowedSyscall {
  const char* name = nullptr;
  const char* why = nullptr;
  // Allowed for a path the traced scenarios may not reach (the heap
  // growing, the first exception thrown, the kernel restarting a poll a
  // stop signal interrupted, the vDSO's fallback on some virtual
  // machines). The trace test requires every other entry to be made.
  bool rare = false;
};

// Exactly the syscalls the executor makes once confined (a test traces it
// through the end-to-end scenarios and fails on any entry it never makes).
// kill and fcntl are further limited by their arguments. Anything
// else kills the executor. It never calls NSS once confined (the launcher
// looks accounts up), so no name service's needs are guessed at here.
const std::vector<AllowedSyscall>& SeccompAllowList();

// Writes the filter in libseccomp's PFC text form to `fd`.
Result<void> PrintSeccompPolicy(int fd);

// Writes "name<TAB>needed|rare<TAB>why" per allowed syscall to `fd`.
Result<void> PrintAllowList(int fd);

// Drops all capabilities except CAP_CHOWN (handing a job's files to its
// user), CAP_DAC_OVERRIDE (working inside job directories users own) and
// CAP_KILL (signalling jobs); bounding and ambient sets cleared. No-op when
// not root.
Result<void> ReduceCapabilities();

// Returns false (and does nothing) when the kernel lacks Landlock.
Result<bool> ApplyLandlock(const ConfinePaths& paths);

// PR_SET_NO_NEW_PRIVS then the seccomp filter.
Result<void> ApplySeccomp();

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_CONFINE_H_

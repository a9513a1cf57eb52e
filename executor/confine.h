// Confinement of the executor after start-up: no_new_privs, capabilities
// cut to kExecutorCaps, Landlock (where the kernel has it) and a seccomp
// allow-list (default: kill the process). Never applied to the launcher:
// all of these are inherited by jobs.
#ifndef HPCB_EXECUTOR_CONFINE_H_
#define HPCB_EXECUTOR_CONFINE_H_

#include <string>
#include <vector>

#include "protocol/base/result.h"

namespace hpcb::executor {

struct ConfinePaths {
  std::vector<std::string> read_write;  // state dir, dev dir, cgroup tree
  std::vector<std::string> read_only;   // /etc (passwd, group), /proc, sysfs
};

// Syscalls the executor may make. Anything else kills it.
const std::vector<std::string>& SeccompAllowList();

// Writes the filter in libseccomp's PFC text form to `fd`.
Result<void> PrintSeccompPolicy(int fd);

// Drops all capabilities except CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER and
// CAP_KILL (effective/permitted; bounding and ambient cleared). No-op when
// not root.
Result<void> ReduceCapabilities();

// Returns false (and does nothing) when the kernel lacks Landlock.
Result<bool> ApplyLandlock(const ConfinePaths& paths);

// PR_SET_NO_NEW_PRIVS then the seccomp filter.
Result<void> ApplySeccomp();

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_CONFINE_H_

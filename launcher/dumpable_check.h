// fs.suid_dumpable decides who may trace a process that has just dropped
// from root to a user. A job child is such a process from its identity
// drop to its execve, and its memory is a copy of the launcher's, which
// may hold other users' commands and environments. At 0 or 2 the kernel
// marks that memory non-dumpable at the drop, so its user can neither
// trace it nor read /proc/<pid>/mem; at 1 (a debugging setting that the
// kernel's documentation calls insecure) they can. So at 1 the launcher
// refuses to start, and refuses every job start while it stays 1.
#ifndef HPCB_LAUNCHER_DUMPABLE_CHECK_H_
#define HPCB_LAUNCHER_DUMPABLE_CHECK_H_

#include <string>

#include "protocol/base/result.h"

namespace hpcb::launcher {

// Reads PROC_ROOT/sys/fs/suid_dumpable: 0 and 2 pass; 1, a value that is
// not one of the three, or a file that cannot be read is an error saying
// which.
Result<void> CheckSuidDumpable(const std::string& proc_root);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_DUMPABLE_CHECK_H_

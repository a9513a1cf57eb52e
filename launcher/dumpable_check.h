// fs.suid_dumpable decides who may trace a process that has just dropped
// from root to a user. A job child before its execve, and a path-check or
// delivery helper, are such processes, and their memory is a copy of the
// launcher's, which may hold other users' commands and environments.
// DropIdentity (user_ops.h) blocks every blockable signal and then seals
// that memory non-dumpable, but between the id change and the seal the
// kernel applies this setting: at 0 and 2 only root may trace it (2 also
// lets it dump core, as root), at 1 (a debugging setting that the
// kernel's documentation calls insecure) its user may, having stopped it
// there. So at 1 the launcher refuses to start, and refuses each of those
// children while it stays 1.
#ifndef HPCB_LAUNCHER_DUMPABLE_CHECK_H_
#define HPCB_LAUNCHER_DUMPABLE_CHECK_H_

#include <string>

#include "common/base/result.h"

namespace hpcb::launcher {

// Reads PROC_ROOT/sys/fs/suid_dumpable: 0 and 2 pass; 1, a value that is
// not one of the three, or a file that cannot be read is an error saying
// which.
Result<void> CheckSuidDumpable(const std::string& proc_root);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_DUMPABLE_CHECK_H_

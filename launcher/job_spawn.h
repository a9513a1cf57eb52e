// Spawning a job from the launcher: fork, then in the child (no allocation,
// no logging): setsid, join the cgroup or set affinity, oom_score_adj 0,
// drop identity, chdir, stdio, close_range, reset signals, execve over the
// job's PATH. Failures travel back through a CLOEXEC pipe.
#ifndef HPCB_LAUNCHER_JOB_SPAWN_H_
#define HPCB_LAUNCHER_JOB_SPAWN_H_

#include <sys/types.h>

#include "protocol/base/result.h"
#include "protocol/launcher_messages.h"

namespace hpcb::launcher {

struct SpawnFds {
  int buffer = -1;      // stdout + stderr
  int cgroup_dir = -1;  // -1: no cgroups (affinity only)
};

// Returns the job's pid, or "failed to start job: <stage>: <strerror>".
Result<pid_t> SpawnJob(const protocol::SpawnRequest& request, const SpawnFds& fds,
                       bool change_identity);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_JOB_SPAWN_H_

// The per-job cgroup under CGROUP_ROOT/hpc-batch/job-<id>. Only numbers from
// the broker go into the path; the root comes from the daemon's flags.
#ifndef HPCB_EXECUTOR_JOB_CGROUP_H_
#define HPCB_EXECUTOR_JOB_CGROUP_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "protocol/job_usage.h"

namespace hpcb::executor {

struct CgroupLimits {
  std::vector<int> cpus;
  std::vector<int> mems;
  std::optional<std::uint64_t> memory_max;
  // Swap is configured on the host (HostHasSwap), so memory.swap.max must
  // exist; without swap a kernel lacking swap accounting is fine.
  bool host_has_swap = true;
};

std::string JobCgroupPath(const std::string& cgroup_root, std::uint64_t id);

// mkdir (an existing, empty one is reused; one holding processes is
// refused) and write cpuset.cpus, cpuset.mems, memory.max,
// memory.swap.max=0 and memory.oom.group=1. Every failure is an error: a job
// that could swap, or lose one process to the OOM killer and run on, would
// time something else than what the user asked for. The one exception is a
// missing memory.swap.max on a host without swap.
// Returns an O_DIRECTORY fd of the job cgroup for the launcher.
Result<UniqueFd> CreateJobCgroup(const std::string& cgroup_root, std::uint64_t id,
                                 const CgroupLimits& limits);

// memory.events has oom_kill > 0. Missing/garbled -> false.
bool JobWasOomKilled(const std::string& cgroup_root, std::uint64_t id);

// What the job's cgroup counted, read when it ends (before removal):
// cpu.stat user_usec/system_usec, memory.peak, memory.events oom_kill and
// pids.peak. A file the kernel lacks (memory.peak before 5.19, pids.peak)
// leaves its figure unset; cpu.stat missing is an error. wall_s is left 0.
Result<protocol::JobUsage> ReadJobCgroupUsage(const std::string& cgroup_root, std::uint64_t id);

// cgroup.events says "populated 1". Missing/garbled -> false.
bool JobCgroupPopulated(const std::string& cgroup_root, std::uint64_t id);

// cgroup.kill (if present), then rmdir; absent is fine. An error (EBUSY:
// the killed processes have not all left yet) means try again later. It
// never waits: no sleep is on the executor's allow-list.
Result<void> RemoveJobCgroup(const std::string& cgroup_root, std::uint64_t id);

// Start-up: rmdirs every CGROUP_ROOT/hpc-batch/job-<id> not in `keep` that is
// empty, as a crash leaves them. Kills nothing: a populated group (a job that
// survived the restart) fails rmdir with EBUSY and stays. Returns the ids
// removed.
std::vector<std::uint64_t> PruneEmptyJobCgroups(const std::string& cgroup_root,
                                                const std::set<std::uint64_t>& keep);
// Writes "1" to cgroup.kill.
Result<void> KillJobCgroup(const std::string& cgroup_root, std::uint64_t id);

// Writes `value` to DIR/name (O_WRONLY|O_TRUNC, no O_CREAT).
Result<void> WriteControl(const std::string& dir, const std::string& name,
                          const std::string& value);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_JOB_CGROUP_H_

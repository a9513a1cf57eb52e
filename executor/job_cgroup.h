// The per-job cgroups under CGROUP_ROOT/hpc-batch/job-<id>. Only numbers from
// the broker go into a path; the root comes from the daemon's flags.
#ifndef HPCB_EXECUTOR_JOB_CGROUP_H_
#define HPCB_EXECUTOR_JOB_CGROUP_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "protocol/job_usage.h"

namespace hpcb::executor {

struct CgroupLimits {
  std::vector<int> cpus;
  std::vector<int> mems;
  std::optional<std::uint64_t> memory_max;
  // Swap is configured on the host, so memory.swap.max must exist; without
  // swap a kernel lacking swap accounting is fine. Unset: read from
  // /proc/swaps when the group is made (swapon can add swap while we run).
  std::optional<bool> host_has_swap;
};

// Every job cgroup, or none (--no-cgroups: `root` unset). Without cgroups
// each operation does nothing and succeeds, and there is nothing to read
// (no OOM kill, no usage: the caller falls back to what wait4 saw), so no
// caller needs a guard of its own.
class JobCgroups {
 public:
  explicit JobCgroups(std::optional<std::string> root) : root_(std::move(root)) {}

  bool enabled() const { return root_.has_value(); }
  std::string PathOf(std::uint64_t id) const;

  // mkdir (an existing, empty one is reused; one holding processes is
  // refused, kAlreadyExists) and write cpuset.cpus, cpuset.mems,
  // memory.max, memory.swap.max=0 and memory.oom.group=1. Every failure is
  // an error: a job that could swap, or lose one process to the OOM killer
  // and run on, would time something else than what the user asked for.
  // The one exception is a missing memory.swap.max on a host without swap.
  // Returns an O_DIRECTORY fd of the job cgroup for the launcher (an
  // invalid one without cgroups).
  Result<UniqueFd> Create(std::uint64_t id, const CgroupLimits& limits) const;

  // memory.events has oom_kill > 0. Missing/garbled -> false.
  bool OomKilled(std::uint64_t id) const;

  // What the job's cgroup counted, read when it ends (before removal):
  // cpu.stat user_usec/system_usec, memory.peak, memory.events oom_kill and
  // pids.peak. A file the kernel lacks (memory.peak before 5.19, pids.peak)
  // leaves its figure unset; cpu.stat missing is an error (kUnavailable
  // without cgroups). wall_s is left 0.
  Result<protocol::JobUsage> Usage(std::uint64_t id) const;

  // cgroup.events says "populated 1". Missing/garbled -> false.
  bool Populated(std::uint64_t id) const;

  // Writes "1" to cgroup.kill.
  Result<void> Kill(std::uint64_t id) const;

  // cgroup.kill (if present), then rmdir; absent is fine. An error (EBUSY:
  // the killed processes have not all left yet) means try again later. It
  // never waits: no sleep is on the executor's allow-list.
  Result<void> Remove(std::uint64_t id) const;

  // Start-up: rmdirs every job group not in `keep` that is empty, as a
  // crash leaves them. Kills nothing: a populated group (a job that
  // survived the restart) fails rmdir with EBUSY and stays. Returns the
  // ids removed.
  std::vector<std::uint64_t> PruneEmpty(const std::set<std::uint64_t>& keep) const;

 private:
  long long EventCount(std::uint64_t id, const char* file, const std::string& wanted) const;

  std::optional<std::string> root_;
};

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_JOB_CGROUP_H_

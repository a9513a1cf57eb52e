// What a finished job used: read by the executor when the job ends, kept
// with the job's record for as long as the job is, shown by `dispatch list
// --finished --long`, `--json` and the job's info.json.
#ifndef HPCB_PROTOCOL_JOB_USAGE_H_
#define HPCB_PROTOCOL_JOB_USAGE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "common/base/result.h"
#include "protocol/codec.h"

namespace hpcb::protocol {

// Where the figures come from. A cgroup counts every process of the job
// (daemons it left behind included) and the memory the kernel charged it
// (page cache too); wait4's rusage counts the job and the descendants it
// reaped, and its peak is the largest single process's resident set.
HPCB_WIRE_ENUM(UsageSource, (kCgroup, "cgroup"), (kRusage, "rusage"));

struct JobUsage {
  UsageSource source = UsageSource::kRusage;
  double wall_s = 0;    // start (exec) to end
  double user_s = 0;    // cpu seconds in user mode, all threads
  double system_s = 0;  // and in the kernel
  std::optional<std::uint64_t> peak_memory_bytes;
  std::uint64_t oom_kills = 0;             // memory.events oom_kill
  std::optional<std::uint64_t> peak_pids;  // pids.peak, where the kernel has it

  HPCB_FIELDS(source, wall_s, user_s, system_s, peak_memory_bytes, oom_kills, peak_pids)
  Result<void> Validate() const;  // broker_checks.cc: only the broker decodes usage
};

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_JOB_USAGE_H_

// Job dependencies (`dispatch new --after ID,...`): whether a queued job's
// dependencies let it start, must end it, or keep it waiting. Pure rules
// over job records; no I/O.
//
// A dependency is always an older job (its id must exist at submission),
// so walking the jobs in id order settles a whole chain in one pass: a
// job ended for a failed dependency is itself failed for those after it.
#ifndef HPCB_BROKER_DEPENDENCIES_H_
#define HPCB_BROKER_DEPENDENCIES_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "broker/job_record.h"

namespace hpcb::broker {

enum class DependencyState {
  kMet,      // every dependency ended as the job asked (or it has none)
  kWaiting,  // some have not ended yet
  kFailed,   // one ended otherwise, or is no longer known: it never runs
};

struct DependencyCheck {
  DependencyState state = DependencyState::kMet;
  std::string why;  // for kFailed: "job 3 failed (exit 1)", for its detail
};

// Whether `job` ended successfully: exit code 0 and no other reason.
bool Succeeded(const JobRecord& job);

DependencyCheck CheckDependencies(const JobRecord& job,
                                  const std::map<std::uint64_t, JobRecord>& jobs);

// Finished jobs that a queued job still waits on: retention must keep
// them, or the waiting job could no longer learn how they ended.
std::set<std::uint64_t> AwaitedJobs(const std::map<std::uint64_t, JobRecord>& jobs);

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_DEPENDENCIES_H_

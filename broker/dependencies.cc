#include "broker/dependencies.h"

#include "protocol/codec.h"

namespace hpcb::broker {
namespace {

std::string HowItEnded(const JobRecord& job) {
  const std::string name = "job " + std::to_string(job.id);
  if (job.reason) return name + " ended as " + std::string(protocol::NameOf(*job.reason));
  if (job.exit_code) return name + " failed (exit " + std::to_string(*job.exit_code) + ")";
  return name + " ended without an exit code";
}

}  // namespace

bool Succeeded(const JobRecord& job) {
  return job.done() && !job.reason && job.exit_code == 0;
}

DependencyCheck CheckDependencies(const JobRecord& job,
                                  const std::map<std::uint64_t, JobRecord>& jobs) {
  DependencyCheck check;
  for (std::uint64_t id : job.after) {
    auto it = jobs.find(id);
    if (it == jobs.end()) {
      return {DependencyState::kFailed, "job " + std::to_string(id) + " is no longer known"};
    }
    const JobRecord& other = it->second;
    if (!other.done()) {
      check.state = DependencyState::kWaiting;
    } else if (!job.after_any && !Succeeded(other)) {
      return {DependencyState::kFailed, HowItEnded(other)};
    }
  }
  return check;
}

std::set<std::uint64_t> AwaitedJobs(const std::map<std::uint64_t, JobRecord>& jobs) {
  std::set<std::uint64_t> awaited;
  for (const auto& [id, job] : jobs) {
    if (!job.queued()) continue;
    for (std::uint64_t other : job.after) {
      auto it = jobs.find(other);
      if (it != jobs.end() && it->second.done()) awaited.insert(other);
    }
  }
  return awaited;
}

}  // namespace hpcb::broker

#include "broker/scheduler.h"

namespace hpcb::broker {

Result<void> PoolScheduler::Validate(const JobDemand& demand) const {
  return pool_.Validate(demand);
}

std::optional<double> PoolScheduler::DefaultBudget(int cpu, bool exclusive) const {
  return pool_.DefaultBudget(cpu, exclusive, min_job_mem_gib_);
}

CpuGrant PoolScheduler::Grant(const JobDemand& demand) const {
  return pool_.Grant(demand);
}

int PoolScheduler::ExclusiveCpus(const JobDemand& demand) const {
  return pool_.ExclusiveCpus(demand);
}

std::vector<Start> PoolScheduler::Schedule(const std::vector<QueuedJob>& queue,
                                           const std::vector<RunningJob>& running, double now) {
  return policy_->Schedule(queue, running, pool_, now);
}

void PoolScheduler::Reserve(const Placement& placement) {
  pool_.Reserve(placement);
}

void PoolScheduler::Release(const Placement& placement) {
  pool_.Release(placement);
}

}  // namespace hpcb::broker

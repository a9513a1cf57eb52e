// Scheduler: what the broker core needs from the resource books and the
// policy. PoolScheduler wraps the real Pool and Policy (placement.h);
// tests pass a fake, so the core links without placement's objects.
#ifndef HPCB_BROKER_SCHEDULER_H_
#define HPCB_BROKER_SCHEDULER_H_

#include <memory>
#include <optional>
#include <vector>

#include "broker/placement.h"
#include "common/base/result.h"

namespace hpcb::broker {

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual Result<void> Validate(const JobDemand& demand) const = 0;
  virtual std::optional<double> DefaultBudget(int cpu, bool exclusive) const = 0;
  // The cpus and whole cores `demand` is given (Pool::Grant).
  virtual CpuGrant Grant(const JobDemand& demand) const = 0;
  // What an exclusive job without --cpu asks for (Pool::ExclusiveCpus).
  virtual int ExclusiveCpus(const JobDemand& demand) const = 0;
  // What discovery found, after the reserve (`dispatch info`).
  virtual const Machine& machine() const = 0;
  // Placements returned are already reserved.
  virtual std::vector<Start> Schedule(const std::vector<QueuedJob>& queue,
                                      const std::vector<RunningJob>& running, double now) = 0;
  virtual void Reserve(const Placement& placement) = 0;
  virtual void Release(const Placement& placement) = 0;
  // Whether `demand` fits in what is free right now. No policy starts a job
  // that does not, so a submission that does not fit costs no pass over
  // the queue. (Policies go on to decide among those that fit.)
  virtual bool FitsNow(const JobDemand& /*demand*/) const { return true; }
};

class PoolScheduler : public Scheduler {
 public:
  PoolScheduler(const Machine& machine, std::unique_ptr<Policy> policy, double min_job_mem_gib)
      : machine_(machine),
        pool_(machine),
        policy_(std::move(policy)),
        min_job_mem_gib_(min_job_mem_gib) {}

  Result<void> Validate(const JobDemand& demand) const override;
  std::optional<double> DefaultBudget(int cpu, bool exclusive) const override;
  CpuGrant Grant(const JobDemand& demand) const override;
  int ExclusiveCpus(const JobDemand& demand) const override;
  const Machine& machine() const override { return machine_; }
  std::vector<Start> Schedule(const std::vector<QueuedJob>& queue,
                              const std::vector<RunningJob>& running, double now) override;
  void Reserve(const Placement& placement) override;
  void Release(const Placement& placement) override;
  bool FitsNow(const JobDemand& demand) const override {
    return pool_.TryPlace(demand).has_value();
  }

 private:
  Machine machine_;
  Pool pool_;
  std::unique_ptr<Policy> policy_;
  double min_job_mem_gib_;
};

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_SCHEDULER_H_

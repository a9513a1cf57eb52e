#include "broker/dependencies.h"

#include <gtest/gtest.h>

namespace hpcb::broker {
namespace {

JobRecord Job(std::uint64_t id, JobState state, std::vector<std::uint64_t> after = {}) {
  JobRecord job;
  job.id = id;
  job.state = state;
  job.after = std::move(after);
  return job;
}

JobRecord Ended(std::uint64_t id, std::optional<std::int64_t> exit_code,
                std::optional<JobReason> reason = std::nullopt) {
  JobRecord job = Job(id, JobState::kDone);
  job.exit_code = exit_code;
  job.reason = reason;
  return job;
}

TEST(CheckDependenciesTest, WaitsUntilEveryDependencyEnded) {
  std::map<std::uint64_t, JobRecord> jobs = {{1, Ended(1, 0)}, {2, Job(2, JobState::kRunning)}};
  JobRecord waiting = Job(3, JobState::kQueued, {1, 2});

  EXPECT_EQ(CheckDependencies(waiting, jobs).state, DependencyState::kWaiting);
  jobs[2] = Ended(2, 0);
  EXPECT_EQ(CheckDependencies(waiting, jobs).state, DependencyState::kMet);
}

TEST(CheckDependenciesTest, AfterOkFailsOnAnyOtherEnding) {
  JobRecord waiting = Job(3, JobState::kQueued, {1});
  for (const JobRecord& bad :
       {Ended(1, 2), Ended(1, 0, JobReason::kKilled), Ended(1, std::nullopt, JobReason::kError)}) {
    std::map<std::uint64_t, JobRecord> jobs = {{1, bad}};
    EXPECT_EQ(CheckDependencies(waiting, jobs).state, DependencyState::kFailed);
  }
  std::map<std::uint64_t, JobRecord> timed_out = {{1, Ended(1, -15, JobReason::kTimeout)}};
  EXPECT_EQ(CheckDependencies(waiting, timed_out).why, "job 1 ended as timeout");
  waiting.after_any = true;
  EXPECT_EQ(CheckDependencies(waiting, timed_out).state, DependencyState::kMet);
}

TEST(CheckDependenciesTest, AForgottenDependencyFailsEvenAfterAny) {
  JobRecord waiting = Job(3, JobState::kQueued, {1});
  waiting.after_any = true;
  DependencyCheck check = CheckDependencies(waiting, {});
  EXPECT_EQ(check.state, DependencyState::kFailed);
  EXPECT_EQ(check.why, "job 1 is no longer known");
}

TEST(AwaitedJobsTest, OnlyFinishedJobsAQueuedJobWaitsOn) {
  std::map<std::uint64_t, JobRecord> jobs = {{1, Ended(1, 0)},
                                             {2, Ended(2, 0)},
                                             {3, Job(3, JobState::kRunning)},
                                             {4, Job(4, JobState::kQueued, {1, 3})},
                                             {5, Job(5, JobState::kRunning, {2})}};
  EXPECT_EQ(AwaitedJobs(jobs), (std::set<std::uint64_t>{1}));
}

}  // namespace
}  // namespace hpcb::broker

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "broker/placement.h"
#include "tests/broker/fake_machine.h"

namespace hpcb::broker {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Cpu;
using testing::Gpu;
using testing::Gpus;
using testing::kTopo4;
using testing::MakeMachine;

constexpr std::int64_t kLong = 86400;

// Drives one policy the way the broker does: queue in id order, starts
// moved to the running list.
class Harness {
 public:
  Harness(const std::string& policy, Machine machine)
      : policy_(MakePolicy(policy)), live_(machine) {}

  void Submit(std::uint64_t id, JobDemand demand, std::int64_t max_time = kLong) {
    queue_.push_back({id, demand, max_time});
  }

  std::vector<std::uint64_t> Pass(double now = 1000) {
    std::vector<Start> starts = policy_->Schedule(queue_, running_, live_, now);
    std::vector<std::uint64_t> ids;
    for (Start& start : starts) {
      ids.push_back(start.id);
      auto it = std::find_if(queue_.begin(), queue_.end(),
                             [&](const QueuedJob& job) { return job.id == start.id; });
      running_.push_back({start.id, start.placement, now + static_cast<double>(it->max_time_s)});
      queue_.erase(it);
    }
    return ids;
  }

  void Finish(std::uint64_t id) {
    auto it = std::find_if(running_.begin(), running_.end(),
                           [&](const RunningJob& job) { return job.id == id; });
    ASSERT_NE(it, running_.end());
    live_.Release(it->placement);
    running_.erase(it);
  }

  Pool& live() { return live_; }
  std::vector<RunningJob>& running() { return running_; }

 private:
  std::unique_ptr<Policy> policy_;
  Pool live_;
  std::vector<QueuedJob> queue_;
  std::vector<RunningJob> running_;
};

Machine FourGpus() { return MakeMachine(2, 4, 0, Gpus(4, kTopo4)); }

void SubmitExample(Harness& harness, std::int64_t first_max = kLong,
                   std::int64_t third_max = kLong) {
  const int demands[] = {1, 4, 2, 1, 2};
  for (int i = 0; i < 5; ++i) {
    std::int64_t max_time = i == 0 ? first_max : (i == 2 ? third_max : kLong);
    harness.Submit(static_cast<std::uint64_t>(i + 1), Gpu(demands[i]), max_time);
  }
}

TEST(PolicyTest, MakePolicyKnowsThreeNames) {
  EXPECT_NE(MakePolicy("fifo-strict"), nullptr);
  EXPECT_NE(MakePolicy("easy-backfill"), nullptr);
  EXPECT_NE(MakePolicy("strict-backfill"), nullptr);
  EXPECT_EQ(MakePolicy("lifo"), nullptr);
}

TEST(PolicyTest, FifoStartsOnlyTheFirstGpuJob) {
  Harness harness("fifo-strict", FourGpus());
  SubmitExample(harness);
  EXPECT_THAT(harness.Pass(), ElementsAre(1));
  EXPECT_THAT(harness.Pass(), IsEmpty());
}

TEST(PolicyTest, FifoOnEightGpusStartsFirstFour) {
  Harness harness("fifo-strict", MakeMachine(2, 4, 0, Gpus(8, testing::Topo8())));
  SubmitExample(harness);
  EXPECT_THAT(harness.Pass(), ElementsAre(1, 2, 3, 4));
}

TEST(PolicyTest, FifoBlocksBehindHeadEvenWithIdleCpus) {
  Harness harness("fifo-strict", MakeMachine(1, 2, 0));
  harness.Submit(1, Cpu(1));
  harness.Submit(2, Cpu(2));
  harness.Submit(3, Cpu(1));
  EXPECT_THAT(harness.Pass(), ElementsAre(1));
}

TEST(PolicyTest, EasyBackfillsAndHoldsFreedGpusForHead) {
  Harness harness("easy-backfill", FourGpus());
  SubmitExample(harness);
  EXPECT_THAT(harness.Pass(), ElementsAre(1, 3, 4));
  harness.Finish(1);
  harness.Submit(6, Gpu(1));
  EXPECT_THAT(harness.Pass(), IsEmpty());  // GPU0 is held for job 2
  harness.Finish(3);
  harness.Finish(4);
  EXPECT_THAT(harness.Pass(), ElementsAre(2));  // 5 is the new head
  EXPECT_THAT(harness.Pass(), IsEmpty());
  harness.Finish(2);
  EXPECT_THAT(harness.Pass(), ElementsAre(5, 6));
}

TEST(PolicyTest, EasyBackfillsLaterSubmissionsWithinBudget) {
  Harness harness("easy-backfill", FourGpus());
  harness.Submit(1, Gpu(1));
  harness.Submit(2, Gpu(4));
  EXPECT_THAT(harness.Pass(), ElementsAre(1));
  harness.Submit(3, Gpu(2));
  EXPECT_THAT(harness.Pass(), ElementsAre(3));
}

TEST(PolicyTest, EasyIgnoresStaleReservation) {
  Harness harness("easy-backfill", MakeMachine(1, 2, 0));
  harness.Submit(1, Cpu(1));
  harness.Submit(2, Cpu(2));
  EXPECT_THAT(harness.Pass(), ElementsAre(1));
  harness.Finish(1);
  EXPECT_THAT(harness.Pass(), ElementsAre(2));
  harness.Submit(3, Cpu(1));
  harness.Finish(2);
  EXPECT_THAT(harness.Pass(), ElementsAre(3));
}

TEST(PolicyTest, EasyPerNodeBudgetKeepsLaterFreedCapacity) {
  Harness harness("easy-backfill", MakeMachine(2, 4, 0));
  harness.Submit(1, Cpu(4));
  harness.Submit(2, Cpu(1));
  harness.Submit(3, Cpu(8));  // head: needs both nodes' worth
  EXPECT_THAT(harness.Pass(), ElementsAre(1, 2));
  harness.Finish(1);  // frees node 0 after the freeze
  harness.Submit(4, Cpu(3));
  EXPECT_THAT(harness.Pass(), ElementsAre(4));
  EXPECT_EQ(harness.running().back().placement.cpus.front() / 4, 1);
  EXPECT_TRUE(harness.live().TryPlace(Cpu(4)));
}

TEST(PolicyTest, EasyNeverBackfillsExclusive) {
  Harness harness("easy-backfill", MakeMachine(2, 4, 0));
  harness.Submit(1, Cpu(1));
  harness.Submit(2, Cpu(8));
  JobDemand exclusive = Cpu(1);
  exclusive.exclusive = true;
  harness.Submit(3, exclusive);
  harness.Submit(4, Cpu(1));
  EXPECT_THAT(harness.Pass(), ElementsAre(1, 4));
}

TEST(PolicyTest, StrictBackfillsOnlyJobsEndingBeforeHead) {
  Harness harness("strict-backfill", FourGpus());
  SubmitExample(harness, /*first_max=*/20, /*third_max=*/10);
  EXPECT_THAT(harness.Pass(1000), ElementsAre(1, 3));
  harness.Finish(1);
  harness.Finish(3);
  EXPECT_THAT(harness.Pass(1020), ElementsAre(2));
}

Machine SixGpus() { return MakeMachine(1, 8, 0, Gpus(6, "")); }

void SetUpSixGpuCase(Harness& harness) {
  std::optional<Placement> held = harness.live().TryPlace(Gpu(2));
  ASSERT_TRUE(held);
  harness.live().Reserve(*held);
  harness.running().push_back({100, *held, 1050});
  harness.Submit(1, Gpu(6));
  harness.Submit(2, Gpu(2), 30);
  harness.Submit(3, Gpu(2), 500);
}

TEST(PolicyTest, StrictUsesDeadlines) {
  Harness harness("strict-backfill", SixGpus());
  SetUpSixGpuCase(harness);
  EXPECT_THAT(harness.Pass(1000), ElementsAre(2));
}

TEST(PolicyTest, EasyIgnoresDeadlines) {
  Harness harness("easy-backfill", SixGpus());
  SetUpSixGpuCase(harness);
  EXPECT_THAT(harness.Pass(1000), ElementsAre(2, 3));
}

TEST(PolicyTest, StrictWithoutAnyReleaseNeverBackfills) {
  Harness harness("strict-backfill", MakeMachine(1, 2, 0));
  harness.Submit(1, Cpu(3));  // can never fit
  harness.Submit(2, Cpu(1), 1);
  EXPECT_THAT(harness.Pass(), IsEmpty());
}

}  // namespace
}  // namespace hpcb::broker

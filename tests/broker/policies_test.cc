#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "broker/placement.h"
#include "tests/broker/fake_machine.h"

namespace hpcb::broker {
namespace {

using testing::Cpu;
using ::testing::ElementsAre;
using testing::ExpectOwnCores;
using testing::Gpu;
using testing::Gpus;
using ::testing::IsEmpty;
using testing::kTopo4;
using testing::MakeMachine;
using testing::MakeSmtMachine;

constexpr std::int64_t kLong = 86400;

// Drives one policy the way the broker does: queue in id order, starts
// moved to the running list. After every pass the running jobs must hold
// whole cores, none shared.
class Harness {
 public:
  Harness(const std::string& policy, Machine machine)
      : policy_(MakePolicy(policy)), machine_(machine), live_(machine) {}

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
    std::vector<const Placement*> held;
    for (const RunningJob& job : running_)
      held.push_back(&job.placement);
    ExpectOwnCores(machine_, held);
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
  const Placement& PlacementOf(std::uint64_t id) const {
    auto it = std::find_if(running_.begin(), running_.end(),
                           [&](const RunningJob& job) { return job.id == id; });
    EXPECT_NE(it, running_.end()) << "job " << id << " is not running";
    static const Placement kNone;
    return it == running_.end() ? kNone : it->placement;
  }

 private:
  std::unique_ptr<Policy> policy_;
  Machine machine_;
  Pool live_;
  std::vector<QueuedJob> queue_;
  std::vector<RunningJob> running_;
};

Machine FourGpus() {
  return MakeMachine(2, 4, 0, Gpus(4, kTopo4));
}

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

Machine SixGpus() {
  return MakeMachine(1, 8, 0, Gpus(6, ""));
}

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

JobDemand ExclusiveDemand(int cpu) {
  JobDemand demand = Cpu(cpu);
  demand.exclusive = true;
  return demand;
}

// The policy, and which jobs of FourWaySmtWithExclusive start once node 1
// is freed: fifo-strict stops at the exclusive job, the backfilling ones
// fit job 6 on the core job 4 leaves.
struct SmtCase {
  std::string policy;
  std::vector<std::uint64_t> after_node_1_frees;
};

std::string NameOfCase(const ::testing::TestParamInfo<SmtCase>& info) {
  std::string name = info.param.policy;
  name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
  return name;
}

void PrintTo(const SmtCase& param, std::ostream* out) {
  *out << param.policy;
}

class SmtPolicyTest : public ::testing::TestWithParam<SmtCase> {};

// 2 nodes x 4 cores x 2 threads: eight --cpu 1 jobs take a core each and
// a ninth waits, though eight logical cpus are idle.
TEST_P(SmtPolicyTest, OneJobPerCoreOnTwoWaySmt) {
  Harness harness(GetParam().policy, MakeSmtMachine(2, 4, 2, 0));
  for (std::uint64_t id = 1; id <= 10; ++id)
    harness.Submit(id, Cpu(1), 100);
  EXPECT_THAT(harness.Pass(), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  for (std::uint64_t id = 1; id <= 8; ++id) {
    EXPECT_EQ(harness.PlacementOf(id).cpus.size(), 2u) << "job " << id;
    EXPECT_EQ(harness.PlacementOf(id).cores, 1) << "job " << id;
  }
  std::vector<int> freed = harness.PlacementOf(3).cpus;
  harness.Finish(3);
  EXPECT_THAT(harness.Pass(), ElementsAre(9));
  EXPECT_EQ(harness.PlacementOf(9).cpus, freed);
  EXPECT_THAT(harness.Pass(), IsEmpty());
}

// 2 nodes x 2 cores x 4 threads: node 0 holds {0,4,8,12} {1,5,9,13},
// node 1 {2,6,10,14} {3,7,11,15}.
TEST_P(SmtPolicyTest, FourWaySmtWithExclusive) {
  Harness harness(GetParam().policy, MakeSmtMachine(2, 2, 4, 0));
  harness.Submit(1, Cpu(3));               // one core of node 0
  harness.Submit(2, Cpu(5));               // both cores of node 1
  harness.Submit(3, Cpu(1));               // node 0's other core
  harness.Submit(4, Cpu(1));               // nothing left: waits
  harness.Submit(5, ExclusiveDemand(16));  // the whole machine
  harness.Submit(6, Cpu(2));
  EXPECT_THAT(harness.Pass(), ElementsAre(1, 2, 3));
  EXPECT_THAT(harness.PlacementOf(1).cpus, ElementsAre(0, 4, 8, 12));
  EXPECT_THAT(harness.PlacementOf(2).cpus, ElementsAre(2, 3, 6, 7, 10, 11, 14, 15));
  EXPECT_THAT(harness.PlacementOf(3).cpus, ElementsAre(1, 5, 9, 13));
  harness.Finish(2);
  std::vector<std::uint64_t> second = harness.Pass();
  EXPECT_EQ(second, GetParam().after_node_1_frees);
  for (std::uint64_t id : second)
    harness.Finish(id);
  harness.Finish(1);
  harness.Finish(3);
  EXPECT_THAT(harness.Pass(), ElementsAre(5));
  EXPECT_EQ(harness.PlacementOf(5).cpus.size(), 16u);
  EXPECT_EQ(harness.PlacementOf(5).cores, 4);
  harness.Finish(5);
  bool six_waited = std::find(second.begin(), second.end(), 6u) == second.end();
  std::vector<std::uint64_t> last = harness.Pass();
  EXPECT_EQ(last, six_waited ? std::vector<std::uint64_t>{6} : std::vector<std::uint64_t>{});
}

// Jobs of mixed sizes, each finishing in turn (oldest first): every one
// runs, and no two running jobs ever share a core (checked by every Pass).
TEST_P(SmtPolicyTest, EveryJobRunsAndNoneSharesACore) {
  Harness harness(GetParam().policy, MakeSmtMachine(2, 4, 2, 0));
  const int sizes[] = {1, 3, 2, 5, 1, 8, 4, 1, 7, 2, 6, 1};
  for (std::uint64_t id = 1; id <= 12; ++id) {
    harness.Submit(id, Cpu(sizes[id - 1]), 10 * static_cast<std::int64_t>(id));
  }
  std::vector<std::uint64_t> started;
  for (int pass = 0; pass < 30 && started.size() < 12; ++pass) {
    for (std::uint64_t id : harness.Pass(1000 + pass))
      started.push_back(id);
    if (!harness.running().empty()) harness.Finish(harness.running().front().id);
  }
  std::sort(started.begin(), started.end());
  EXPECT_THAT(started, ElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, SmtPolicyTest,
                         ::testing::Values(SmtCase{"fifo-strict", {4}},
                                           SmtCase{"easy-backfill", {4, 6}},
                                           SmtCase{"strict-backfill", {4, 6}}),
                         NameOfCase);

}  // namespace
}  // namespace hpcb::broker

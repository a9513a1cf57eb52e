#include "executor/job_cgroup.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "tests/testing/temp_dir.h"

namespace hpcb::executor {
namespace {

// A fake cgroupfs: control files exist before the write, as in the kernel.
void LayOutJob(const std::string& root, std::uint64_t id) {
  std::string dir = JobCgroups(root).PathOf(id);
  for (const char* name : {"cpuset.cpus", "cpuset.mems", "memory.max", "memory.swap.max",
                           "memory.oom.group", "cgroup.kill", "memory.events"}) {
    testing::WriteText(dir + "/" + name, "");
  }
}

TEST(JobCgroupTest, PathIsBuiltFromTheIdOnly) {
  EXPECT_EQ(JobCgroups("/sys/fs/cgroup").PathOf(12), "/sys/fs/cgroup/hpc-batch/job-12");
}

TEST(JobCgroupTest, WritesEveryLimit) {
  testing::TempDir root;
  LayOutJob(root.path(), 3);
  auto fd = JobCgroups(root.path()).Create(3, {{0, 2, 3}, {1}, 25769803776ull});
  ASSERT_TRUE(fd) << fd.error().message();
  EXPECT_TRUE(fd->valid());
  std::string dir = JobCgroups(root.path()).PathOf(3);
  EXPECT_EQ(testing::ReadText(dir + "/cpuset.cpus"), "0,2,3");
  EXPECT_EQ(testing::ReadText(dir + "/cpuset.mems"), "1");
  EXPECT_EQ(testing::ReadText(dir + "/memory.max"), "25769803776");
  EXPECT_EQ(testing::ReadText(dir + "/memory.swap.max"), "0");
  EXPECT_EQ(testing::ReadText(dir + "/memory.oom.group"), "1");
}

TEST(JobCgroupTest, NoBudgetLeavesMemoryMaxAlone) {
  testing::TempDir root;
  LayOutJob(root.path(), 4);
  ASSERT_TRUE(JobCgroups(root.path()).Create(4, {{0}, {0}, std::nullopt}));
  EXPECT_EQ(testing::ReadText(JobCgroups(root.path()).PathOf(4) + "/memory.max"), "");
}

TEST(JobCgroupTest, MissingCpusetFileIsAnError) {
  testing::TempDir root;
  std::filesystem::create_directories(root.path() + "/hpc-batch");
  EXPECT_FALSE(JobCgroups(root.path()).Create(5, {{0}, {0}, std::nullopt}));
}

TEST(JobCgroupTest, SwapThatCannotBeTurnedOffRefusesTheJob) {
  testing::TempDir root;
  LayOutJob(root.path(), 10);
  std::filesystem::remove(JobCgroups(root.path()).PathOf(10) + "/memory.swap.max");
  auto made = JobCgroups(root.path()).Create(10, {{0}, {0}, std::nullopt, /*host_has_swap=*/true});
  ASSERT_FALSE(made);
  EXPECT_NE(made.error().message().find("cannot turn swap off"), std::string::npos)
      << made.error().message();
}

TEST(JobCgroupTest, NoSwapAccountingIsFineOnAHostWithoutSwap) {
  testing::TempDir root;
  LayOutJob(root.path(), 11);
  std::filesystem::remove(JobCgroups(root.path()).PathOf(11) + "/memory.swap.max");
  auto made = JobCgroups(root.path()).Create(11, {{0}, {0}, std::nullopt, /*host_has_swap=*/false});
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_EQ(testing::ReadText(JobCgroups(root.path()).PathOf(11) + "/memory.oom.group"), "1");
}

TEST(JobCgroupTest, MissingOomGroupRefusesTheJob) {
  testing::TempDir root;
  LayOutJob(root.path(), 12);
  std::filesystem::remove(JobCgroups(root.path()).PathOf(12) + "/memory.oom.group");
  auto made = JobCgroups(root.path()).Create(12, {{0}, {0}, std::nullopt, /*host_has_swap=*/false});
  ASSERT_FALSE(made);
  EXPECT_NE(made.error().message().find("memory.oom.group"), std::string::npos)
      << made.error().message();
}

TEST(JobCgroupTest, ALeftoverGroupIsReusedOnlyWhenEmpty) {
  testing::TempDir root;
  LayOutJob(root.path(), 13);
  std::string events = JobCgroups(root.path()).PathOf(13) + "/cgroup.events";
  testing::WriteText(events, "populated 0\nfrozen 0\n");
  EXPECT_TRUE(JobCgroups(root.path()).Create(13, {{0}, {0}, std::nullopt, false}));
  testing::WriteText(events, "populated 1\nfrozen 0\n");
  auto made = JobCgroups(root.path()).Create(13, {{0}, {0}, std::nullopt, false});
  ASSERT_FALSE(made);
  EXPECT_NE(made.error().message().find("already holds processes"), std::string::npos)
      << made.error().message();
}

TEST(JobCgroupTest, OomOnlyFromOomKill) {
  testing::TempDir root;
  LayOutJob(root.path(), 6);
  std::string events = JobCgroups(root.path()).PathOf(6) + "/memory.events";
  testing::WriteText(events, "low 0\nhigh 0\nmax 5\noom 2\noom_kill 0\n");
  EXPECT_FALSE(JobCgroups(root.path()).OomKilled(6));
  testing::WriteText(events, "low 0\nhigh 0\nmax 5\noom 2\noom_kill 1\n");
  EXPECT_TRUE(JobCgroups(root.path()).OomKilled(6));
  testing::WriteText(events, "garbage");
  EXPECT_FALSE(JobCgroups(root.path()).OomKilled(6));
  EXPECT_FALSE(JobCgroups(root.path()).OomKilled(99));
}

TEST(JobCgroupTest, UsageComesFromTheGroupsOwnCounters) {
  testing::TempDir root;
  const std::string dir = JobCgroups(root.path()).PathOf(5);
  testing::WriteText(dir + "/cpu.stat",
                     "usage_usec 4100000\nuser_usec 3600000\nsystem_usec 500000\n"
                     "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n");
  testing::WriteText(dir + "/memory.peak", "209715200\n");
  testing::WriteText(dir + "/memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
  testing::WriteText(dir + "/pids.peak", "3\n");
  Result<protocol::JobUsage> usage = JobCgroups(root.path()).Usage(5);
  ASSERT_TRUE(usage) << usage.error().message();
  EXPECT_EQ(usage->source, protocol::UsageSource::kCgroup);
  EXPECT_DOUBLE_EQ(usage->user_s, 3.6);
  EXPECT_DOUBLE_EQ(usage->system_s, 0.5);
  EXPECT_EQ(usage->peak_memory_bytes, 209715200u);
  EXPECT_EQ(usage->oom_kills, 1u);
  EXPECT_EQ(usage->peak_pids, 3u);
}

TEST(JobCgroupTest, UsageLeavesOutWhatAnOlderKernelLacks) {
  testing::TempDir root;
  const std::string dir = JobCgroups(root.path()).PathOf(6);
  testing::WriteText(dir + "/cpu.stat", "usage_usec 10\nuser_usec 6\nsystem_usec 4\n");
  Result<protocol::JobUsage> usage = JobCgroups(root.path()).Usage(6);
  ASSERT_TRUE(usage) << usage.error().message();
  EXPECT_FALSE(usage->peak_memory_bytes);
  EXPECT_FALSE(usage->peak_pids);
  EXPECT_EQ(usage->oom_kills, 0u);
  // No cpu.stat: no cgroup to speak of, an error the caller reports.
  EXPECT_FALSE(JobCgroups(root.path()).Usage(7));
}

TEST(JobCgroupTest, KillWritesOneAndRemoveToleratesAbsence) {
  testing::TempDir root;
  LayOutJob(root.path(), 7);
  ASSERT_TRUE(JobCgroups(root.path()).Kill(7));
  EXPECT_EQ(testing::ReadText(JobCgroups(root.path()).PathOf(7) + "/cgroup.kill"), "1");
  EXPECT_TRUE(JobCgroups(root.path()).Remove(8));
  // A fake dir with files in it cannot be rmdir'd: reported, not hidden.
  EXPECT_FALSE(JobCgroups(root.path()).Remove(7));
}

TEST(JobCgroupTest, PopulatedOnlyFromCgroupEvents) {
  testing::TempDir root;
  LayOutJob(root.path(), 9);
  std::string events = JobCgroups(root.path()).PathOf(9) + "/cgroup.events";
  EXPECT_FALSE(JobCgroups(root.path()).Populated(9));  // no file
  testing::WriteText(events, "populated 1\nfrozen 0\n");
  EXPECT_TRUE(JobCgroups(root.path()).Populated(9));
  testing::WriteText(events, "populated 0\nfrozen 0\n");
  EXPECT_FALSE(JobCgroups(root.path()).Populated(9));
}

TEST(JobCgroupTest, RemoveKillsAndNeverWaitsForAPopulatedGroup) {
  testing::TempDir root;
  LayOutJob(root.path(), 10);
  testing::WriteText(JobCgroups(root.path()).PathOf(10) + "/cgroup.events", "populated 1\n");
  EXPECT_FALSE(JobCgroups(root.path()).Remove(10));  // tried again later, by the caller
  EXPECT_EQ(testing::ReadText(JobCgroups(root.path()).PathOf(10) + "/cgroup.kill"), "1");
  // An empty dir stands for an empty cgroup: removed.
  std::filesystem::create_directories(JobCgroups(root.path()).PathOf(11));
  EXPECT_TRUE(JobCgroups(root.path()).Remove(11));
  EXPECT_FALSE(std::filesystem::exists(JobCgroups(root.path()).PathOf(11)));
}

TEST(JobCgroupTest, PruneRemovesOnlyEmptyUnkeptJobGroups) {
  testing::TempDir root;
  std::string base = root.path() + "/hpc-batch";
  // Empty dirs stand for empty cgroups; a dir with files for a populated one
  // (rmdir fails, as EBUSY would in cgroupfs).
  for (const char* name : {"job-1", "job-2", "job-3", "job-07", "jobs", "other"}) {
    std::filesystem::create_directories(base + "/" + name);
  }
  testing::WriteText(base + "/job-4/cgroup.procs", "123\n");
  testing::WriteText(base + "/job-5", "not a dir");
  auto removed = JobCgroups(root.path()).PruneEmpty({2});
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::uint64_t>{1, 3}));
  EXPECT_FALSE(std::filesystem::exists(base + "/job-1"));
  EXPECT_TRUE(std::filesystem::exists(base + "/job-2"));  // kept: a running job
  EXPECT_FALSE(std::filesystem::exists(base + "/job-3"));
  EXPECT_TRUE(std::filesystem::exists(base + "/job-4/cgroup.procs"));  // populated
  EXPECT_TRUE(std::filesystem::exists(base + "/job-5"));
  EXPECT_TRUE(std::filesystem::exists(base + "/job-07"));  // not a name we make
  EXPECT_TRUE(std::filesystem::exists(base + "/jobs"));
  EXPECT_TRUE(std::filesystem::exists(base + "/other"));
  // Nothing was killed while pruning.
  EXPECT_FALSE(std::filesystem::exists(base + "/job-4/cgroup.kill"));
  EXPECT_TRUE(JobCgroups(root.path() + "/absent").PruneEmpty({}).empty());
}

// --no-cgroups: every operation is a no-op that succeeds, nothing is made
// or read, and usage is unavailable (so the caller reports wait4's).
TEST(JobCgroupTest, WithoutCgroupsNothingIsTouched) {
  testing::TempDir root;
  LayOutJob(root.path(), 3);
  testing::WriteText(JobCgroups(root.path()).PathOf(3) + "/memory.events", "oom_kill 1\n");
  const JobCgroups none(std::nullopt);
  EXPECT_FALSE(none.enabled());
  Result<UniqueFd> made = none.Create(3, {{0}, {0}, std::nullopt});
  ASSERT_TRUE(made);
  EXPECT_FALSE(made->valid());
  EXPECT_FALSE(none.OomKilled(3));
  EXPECT_FALSE(none.Populated(3));
  EXPECT_EQ(none.Usage(3).error().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(none.Kill(3));
  EXPECT_TRUE(none.Remove(3));
  EXPECT_TRUE(none.PruneEmpty({}).empty());
  EXPECT_EQ(testing::ReadText(JobCgroups(root.path()).PathOf(3) + "/cgroup.kill"), "");
  EXPECT_EQ(testing::ReadText(JobCgroups(root.path()).PathOf(3) + "/cpuset.cpus"), "");
  EXPECT_TRUE(JobCgroups(root.path()).OomKilled(3));  // the same files, read with cgroups
}

}  // namespace
}  // namespace hpcb::executor

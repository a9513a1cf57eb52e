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
  std::string dir = JobCgroupPath(root, id);
  for (const char* name : {"cpuset.cpus", "cpuset.mems", "memory.max", "memory.swap.max",
                           "memory.oom.group", "cgroup.kill", "memory.events"}) {
    testing::WriteText(dir + "/" + name, "");
  }
}

TEST(JobCgroupTest, PathIsBuiltFromTheIdOnly) {
  EXPECT_EQ(JobCgroupPath("/sys/fs/cgroup", 12), "/sys/fs/cgroup/hpc-batch/job-12");
}

TEST(JobCgroupTest, WritesEveryLimit) {
  testing::TempDir root;
  LayOutJob(root.path(), 3);
  auto fd = CreateJobCgroup(root.path(), 3, {{0, 2, 3}, {1}, 25769803776ull});
  ASSERT_TRUE(fd) << fd.error().message();
  EXPECT_TRUE(fd->valid());
  std::string dir = JobCgroupPath(root.path(), 3);
  EXPECT_EQ(testing::ReadText(dir + "/cpuset.cpus"), "0,2,3");
  EXPECT_EQ(testing::ReadText(dir + "/cpuset.mems"), "1");
  EXPECT_EQ(testing::ReadText(dir + "/memory.max"), "25769803776");
  EXPECT_EQ(testing::ReadText(dir + "/memory.swap.max"), "0");
  EXPECT_EQ(testing::ReadText(dir + "/memory.oom.group"), "1");
}

TEST(JobCgroupTest, NoBudgetLeavesMemoryMaxAlone) {
  testing::TempDir root;
  LayOutJob(root.path(), 4);
  ASSERT_TRUE(CreateJobCgroup(root.path(), 4, {{0}, {0}, std::nullopt}));
  EXPECT_EQ(testing::ReadText(JobCgroupPath(root.path(), 4) + "/memory.max"), "");
}

TEST(JobCgroupTest, MissingCpusetFileIsAnError) {
  testing::TempDir root;
  std::filesystem::create_directories(root.path() + "/hpc-batch");
  EXPECT_FALSE(CreateJobCgroup(root.path(), 5, {{0}, {0}, std::nullopt}));
}

TEST(JobCgroupTest, SwapThatCannotBeTurnedOffRefusesTheJob) {
  testing::TempDir root;
  LayOutJob(root.path(), 10);
  std::filesystem::remove(JobCgroupPath(root.path(), 10) + "/memory.swap.max");
  auto made = CreateJobCgroup(root.path(), 10, {{0}, {0}, std::nullopt, /*host_has_swap=*/true});
  ASSERT_FALSE(made);
  EXPECT_NE(made.error().message().find("cannot turn swap off"), std::string::npos)
      << made.error().message();
}

TEST(JobCgroupTest, NoSwapAccountingIsFineOnAHostWithoutSwap) {
  testing::TempDir root;
  LayOutJob(root.path(), 11);
  std::filesystem::remove(JobCgroupPath(root.path(), 11) + "/memory.swap.max");
  auto made = CreateJobCgroup(root.path(), 11, {{0}, {0}, std::nullopt, /*host_has_swap=*/false});
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_EQ(testing::ReadText(JobCgroupPath(root.path(), 11) + "/memory.oom.group"), "1");
}

TEST(JobCgroupTest, MissingOomGroupRefusesTheJob) {
  testing::TempDir root;
  LayOutJob(root.path(), 12);
  std::filesystem::remove(JobCgroupPath(root.path(), 12) + "/memory.oom.group");
  auto made = CreateJobCgroup(root.path(), 12, {{0}, {0}, std::nullopt, /*host_has_swap=*/false});
  ASSERT_FALSE(made);
  EXPECT_NE(made.error().message().find("memory.oom.group"), std::string::npos)
      << made.error().message();
}

TEST(JobCgroupTest, ALeftoverGroupIsReusedOnlyWhenEmpty) {
  testing::TempDir root;
  LayOutJob(root.path(), 13);
  std::string events = JobCgroupPath(root.path(), 13) + "/cgroup.events";
  testing::WriteText(events, "populated 0\nfrozen 0\n");
  EXPECT_TRUE(CreateJobCgroup(root.path(), 13, {{0}, {0}, std::nullopt, false}));
  testing::WriteText(events, "populated 1\nfrozen 0\n");
  auto made = CreateJobCgroup(root.path(), 13, {{0}, {0}, std::nullopt, false});
  ASSERT_FALSE(made);
  EXPECT_NE(made.error().message().find("already holds processes"), std::string::npos)
      << made.error().message();
}

TEST(JobCgroupTest, OomOnlyFromOomKill) {
  testing::TempDir root;
  LayOutJob(root.path(), 6);
  std::string events = JobCgroupPath(root.path(), 6) + "/memory.events";
  testing::WriteText(events, "low 0\nhigh 0\nmax 5\noom 2\noom_kill 0\n");
  EXPECT_FALSE(JobWasOomKilled(root.path(), 6));
  testing::WriteText(events, "low 0\nhigh 0\nmax 5\noom 2\noom_kill 1\n");
  EXPECT_TRUE(JobWasOomKilled(root.path(), 6));
  testing::WriteText(events, "garbage");
  EXPECT_FALSE(JobWasOomKilled(root.path(), 6));
  EXPECT_FALSE(JobWasOomKilled(root.path(), 99));
}

TEST(JobCgroupTest, UsageComesFromTheGroupsOwnCounters) {
  testing::TempDir root;
  const std::string dir = JobCgroupPath(root.path(), 5);
  testing::WriteText(dir + "/cpu.stat",
                     "usage_usec 4100000\nuser_usec 3600000\nsystem_usec 500000\n"
                     "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n");
  testing::WriteText(dir + "/memory.peak", "209715200\n");
  testing::WriteText(dir + "/memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
  testing::WriteText(dir + "/pids.peak", "3\n");
  Result<protocol::JobUsage> usage = ReadJobCgroupUsage(root.path(), 5);
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
  const std::string dir = JobCgroupPath(root.path(), 6);
  testing::WriteText(dir + "/cpu.stat", "usage_usec 10\nuser_usec 6\nsystem_usec 4\n");
  Result<protocol::JobUsage> usage = ReadJobCgroupUsage(root.path(), 6);
  ASSERT_TRUE(usage) << usage.error().message();
  EXPECT_FALSE(usage->peak_memory_bytes);
  EXPECT_FALSE(usage->peak_pids);
  EXPECT_EQ(usage->oom_kills, 0u);
  // No cpu.stat: no cgroup to speak of, an error the caller reports.
  EXPECT_FALSE(ReadJobCgroupUsage(root.path(), 7));
}

TEST(JobCgroupTest, KillWritesOneAndRemoveToleratesAbsence) {
  testing::TempDir root;
  LayOutJob(root.path(), 7);
  ASSERT_TRUE(KillJobCgroup(root.path(), 7));
  EXPECT_EQ(testing::ReadText(JobCgroupPath(root.path(), 7) + "/cgroup.kill"), "1");
  EXPECT_TRUE(RemoveJobCgroup(root.path(), 8));
  // A fake dir with files in it cannot be rmdir'd: reported, not hidden.
  EXPECT_FALSE(RemoveJobCgroup(root.path(), 7));
}

TEST(JobCgroupTest, PopulatedOnlyFromCgroupEvents) {
  testing::TempDir root;
  LayOutJob(root.path(), 9);
  std::string events = JobCgroupPath(root.path(), 9) + "/cgroup.events";
  EXPECT_FALSE(JobCgroupPopulated(root.path(), 9));  // no file
  testing::WriteText(events, "populated 1\nfrozen 0\n");
  EXPECT_TRUE(JobCgroupPopulated(root.path(), 9));
  testing::WriteText(events, "populated 0\nfrozen 0\n");
  EXPECT_FALSE(JobCgroupPopulated(root.path(), 9));
}

TEST(JobCgroupTest, RemoveKillsAndNeverWaitsForAPopulatedGroup) {
  testing::TempDir root;
  LayOutJob(root.path(), 10);
  testing::WriteText(JobCgroupPath(root.path(), 10) + "/cgroup.events", "populated 1\n");
  EXPECT_FALSE(RemoveJobCgroup(root.path(), 10));  // tried again later, by the caller
  EXPECT_EQ(testing::ReadText(JobCgroupPath(root.path(), 10) + "/cgroup.kill"), "1");
  // An empty dir stands for an empty cgroup: removed.
  std::filesystem::create_directories(JobCgroupPath(root.path(), 11));
  EXPECT_TRUE(RemoveJobCgroup(root.path(), 11));
  EXPECT_FALSE(std::filesystem::exists(JobCgroupPath(root.path(), 11)));
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
  auto removed = PruneEmptyJobCgroups(root.path(), {2});
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
  EXPECT_TRUE(PruneEmptyJobCgroups(root.path() + "/absent", {}).empty());
}

}  // namespace
}  // namespace hpcb::executor

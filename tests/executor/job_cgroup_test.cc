#include "executor/job_cgroup.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/executor/test_util.h"

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

TEST(JobCgroupTest, KillWritesOneAndRemoveToleratesAbsence) {
  testing::TempDir root;
  LayOutJob(root.path(), 7);
  ASSERT_TRUE(KillJobCgroup(root.path(), 7));
  EXPECT_EQ(testing::ReadText(JobCgroupPath(root.path(), 7) + "/cgroup.kill"), "1");
  EXPECT_TRUE(RemoveJobCgroup(root.path(), 8));
  // A fake dir with files in it cannot be rmdir'd: reported, not hidden.
  EXPECT_FALSE(RemoveJobCgroup(root.path(), 7));
}

}  // namespace
}  // namespace hpcb::executor

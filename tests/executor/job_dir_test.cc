#include "executor/job_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "executor/tree_removal.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::executor {
namespace {

using testing::ReadText;
using testing::TempDir;
using testing::WriteText;

TEST(JobDirTest, CreatesDirAndEmptyBufferWithModes) {
  TempDir tmp;
  std::string dir = tmp.path() + "/7";
  auto made = CreateJobDir(dir, std::nullopt, "{}\n");
  ASSERT_TRUE(made) << made.error().message();
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  ASSERT_EQ(::stat((dir + "/output").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_size, 0);
  ASSERT_EQ(::stat((dir + "/info.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(ReadText(dir + "/info.json"), "{}\n");
  EXPECT_FALSE(CreateJobDir(dir, std::nullopt, "{}\n")) << "an existing dir is never reused";
}

TEST(JobDirTest, OwnerIsSetThroughTheFdsWhenRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown needs root";
  TempDir tmp;
  std::string dir = tmp.path() + "/8";
  ASSERT_TRUE(CreateJobDir(dir, JobDirOwner{4321, 4322}, "{}\n"));
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 4321u);
  EXPECT_EQ(st.st_gid, 4322u);
  ASSERT_EQ(::stat((dir + "/output").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 4321u);
  ASSERT_EQ(::stat((dir + "/info.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 4321u);
  EXPECT_EQ(st.st_gid, 4322u);
}

TEST(JobDirTest, BufferOpensWhenItIsTheRealFile) {
  TempDir tmp;
  std::string dir = tmp.path() + "/1";
  auto made = CreateJobDir(dir, std::nullopt, "{}\n");
  ASSERT_TRUE(made);
  auto fd = OpenJobBuffer(made->get(), O_WRONLY | O_APPEND, std::nullopt);
  ASSERT_TRUE(fd) << fd.error().message();
  ASSERT_EQ(::write(fd->get(), "hi\n", 3), 3);
  EXPECT_EQ(ReadText(dir + "/output"), "hi\n");
  EXPECT_EQ(::fcntl(fd->get(), F_GETFL) & O_NONBLOCK, 0) << "the job must not inherit O_NONBLOCK";
}

// --error's own buffer is made only when asked for, and held to the same
// checks as the output's.
TEST(JobDirTest, AnErrorBufferIsMadeOnlyForAJobThatAsks) {
  TempDir tmp;
  auto plain = CreateJobDir(tmp.path() + "/1", std::nullopt, "{}\n");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(OpenJobBuffer(plain->get(), O_RDONLY, std::nullopt, "error"));
  std::string dir = tmp.path() + "/2";
  auto made = CreateJobDir(dir, std::nullopt, "{}\n", /*error_buffer=*/true);
  ASSERT_TRUE(made);
  auto fd = OpenJobBuffer(made->get(), O_WRONLY | O_APPEND, std::nullopt, "error");
  ASSERT_TRUE(fd) << fd.error().message();
  ASSERT_EQ(::write(fd->get(), "oops\n", 5), 5);
  EXPECT_EQ(ReadText(dir + "/error"), "oops\n");
  EXPECT_EQ(ReadText(dir + "/output"), "");
  WriteText(tmp.path() + "/victim", "precious\n");
  ASSERT_EQ(::unlink((dir + "/error").c_str()), 0);
  ASSERT_EQ(::symlink((tmp.path() + "/victim").c_str(), (dir + "/error").c_str()), 0);
  auto swapped = OpenJobBuffer(made->get(), O_WRONLY | O_APPEND, std::nullopt, "error");
  ASSERT_FALSE(swapped);
  EXPECT_NE(swapped.error().message().find("the error buffer"), std::string::npos)
      << swapped.error().message();
  EXPECT_EQ(ReadText(tmp.path() + "/victim"), "precious\n");
}

TEST(JobDirTest, BufferSwappedForASymlinkIsRefusedAndTheTargetUntouched) {
  TempDir tmp;
  std::string dir = tmp.path() + "/1";
  auto made = CreateJobDir(dir, std::nullopt, "{}\n");
  ASSERT_TRUE(made);
  WriteText(tmp.path() + "/victim", "precious\n");
  ASSERT_EQ(::unlink((dir + "/output").c_str()), 0);
  ASSERT_EQ(::symlink((tmp.path() + "/victim").c_str(), (dir + "/output").c_str()), 0);
  EXPECT_FALSE(OpenJobBuffer(made->get(), O_WRONLY | O_APPEND, std::nullopt));
  EXPECT_EQ(ReadText(tmp.path() + "/victim"), "precious\n");
}

TEST(JobDirTest, BufferSwappedForAHardLinkIsRefused) {
  TempDir tmp;
  std::string dir = tmp.path() + "/1";
  auto made = CreateJobDir(dir, std::nullopt, "{}\n");
  ASSERT_TRUE(made);
  WriteText(tmp.path() + "/victim", "precious\n");
  ASSERT_EQ(::unlink((dir + "/output").c_str()), 0);
  ASSERT_EQ(::link((tmp.path() + "/victim").c_str(), (dir + "/output").c_str()), 0);
  auto fd = OpenJobBuffer(made->get(), O_WRONLY | O_APPEND, std::nullopt);
  ASSERT_FALSE(fd);
  EXPECT_NE(fd.error().message().find("hard links"), std::string::npos);
}

TEST(JobDirTest, BufferSwappedForAFifoFailsAtOnceInsteadOfBlocking) {
  TempDir tmp;
  std::string dir = tmp.path() + "/1";
  auto made = CreateJobDir(dir, std::nullopt, "{}\n");
  ASSERT_TRUE(made);
  ASSERT_EQ(::unlink((dir + "/output").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir + "/output").c_str(), 0600), 0);
  // Without O_NONBLOCK both opens would wait for a peer forever.
  EXPECT_FALSE(OpenJobBuffer(made->get(), O_RDONLY, std::nullopt));
  EXPECT_FALSE(OpenJobBuffer(made->get(), O_WRONLY | O_APPEND, std::nullopt));
}

TEST(JobDirTest, BufferOfAnotherOwnerIsRefused) {
  TempDir tmp;
  std::string dir = tmp.path() + "/1";
  auto made = CreateJobDir(dir, std::nullopt, "{}\n");
  ASSERT_TRUE(made);
  auto fd = OpenJobBuffer(made->get(), O_RDONLY, JobDirOwner{::getuid() + 1, 0});
  ASSERT_FALSE(fd);
  EXPECT_NE(fd.error().message().find("not owned"), std::string::npos);
}

TEST(JobDirTest, ReplaceFileDoesNotWriteThroughAPlantedSymlink) {
  TempDir tmp;
  std::string dir = tmp.path() + "/1";
  auto made = CreateJobDir(dir, std::nullopt, "{}\n");
  ASSERT_TRUE(made);
  WriteText(tmp.path() + "/victim", "precious\n");
  // Both the final name and the temp name planted as links to the victim.
  ASSERT_EQ(::unlink((dir + "/info.json").c_str()), 0);
  ASSERT_EQ(::symlink((tmp.path() + "/victim").c_str(), (dir + "/info.json").c_str()), 0);
  ASSERT_EQ(::symlink((tmp.path() + "/victim").c_str(), (dir + "/.info.json.tmp").c_str()), 0);
  auto replaced = ReplaceJobFile(made->get(), "info.json", "{\"v\":2}\n", 0640, std::nullopt);
  ASSERT_TRUE(replaced) << replaced.error().message();
  EXPECT_EQ(ReadText(tmp.path() + "/victim"), "precious\n");
  EXPECT_EQ(ReadText(dir + "/info.json"), "{\"v\":2}\n");
  struct stat st {};
  ASSERT_EQ(::lstat((dir + "/info.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST(JobDirTest, RemoveDeletesNestedTreesButNeverFollowsLinks) {
  TempDir tmp;
  std::string dir = tmp.path() + "/1";
  ASSERT_TRUE(CreateJobDir(dir, std::nullopt, "{}\n"));
  std::string outside = tmp.path() + "/outside";
  WriteText(outside + "/keep", "keep\n");
  WriteText(dir + "/a/b/c", "x");
  ASSERT_EQ(::symlink(outside.c_str(), (dir + "/a/link").c_str()), 0);
  ASSERT_EQ(::symlink(outside.c_str(), (dir + "/dirlink").c_str()), 0);
  auto removed = RemoveJobDir(dir, std::nullopt);
  ASSERT_TRUE(removed) << removed.error().message();
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_EQ(ReadText(outside + "/keep"), "keep\n");
  EXPECT_TRUE(RemoveJobDir(dir, std::nullopt)) << "removing what is gone is fine";
}

TEST(JobDirTest, RemoveOfASymlinkInPlaceOfTheDirRemovesOnlyTheLink) {
  TempDir tmp;
  std::string outside = tmp.path() + "/outside";
  WriteText(outside + "/keep", "keep\n");
  std::string dir = tmp.path() + "/1";
  ASSERT_EQ(::symlink(outside.c_str(), dir.c_str()), 0);
  EXPECT_TRUE(RemoveJobDir(dir, std::nullopt));
  EXPECT_EQ(ReadText(outside + "/keep"), "keep\n");
  EXPECT_FALSE(std::filesystem::is_symlink(dir));
}

TEST(JobDirTest, RemoveRefusesTreesDeeperThanTheBound) {
  TempDir tmp;
  std::string dir = tmp.path() + "/1";
  ASSERT_TRUE(CreateJobDir(dir, std::nullopt, "{}\n"));
  WriteText(dir + "/a/b/c/d/e", "x");
  auto removed = RemoveJobDir(dir, std::nullopt, 2);
  ASSERT_FALSE(removed);
  EXPECT_NE(removed.error().message().find("too deep"), std::string::npos);
}

// A tree taken apart a few entries a step (as a forget does, a step per
// loop turn): each step stops within its budget, no link is followed, and
// the tree is gone at the end.
TEST(JobDirTest, AStepwiseRemovalStaysWithinEachStepsBudget) {
  TempDir tmp;
  std::string dir = tmp.path() + "/1";
  ASSERT_TRUE(CreateJobDir(dir, std::nullopt, "{}\n"));
  std::string outside = tmp.path() + "/outside";
  WriteText(outside + "/keep", "keep\n");
  for (int i = 0; i < 40; ++i) {
    WriteText(dir + "/flat/f" + std::to_string(i), "x");
    WriteText(dir + "/deep/a/b/g" + std::to_string(i), "y");
  }
  ASSERT_EQ(::symlink(outside.c_str(), (dir + "/deep/a/link").c_str()), 0);
  TreeRemoval removal(dir, std::nullopt);
  int steps = 0;
  for (;; ++steps) {
    ASSERT_LT(steps, 1000) << "the removal never ended";
    std::size_t budget = 10;
    Result<bool> done = removal.Step(budget);
    ASSERT_TRUE(done) << done.error().message();
    if (*done) break;
    EXPECT_TRUE(std::filesystem::exists(dir)) << "gone before its last step";
  }
  EXPECT_GE(steps, 8) << "about 90 entries cannot go in fewer steps of 10";
  EXPECT_TRUE(removal.Outcome());
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_EQ(ReadText(outside + "/keep"), "keep\n");
}

// Removals wait their turn without holding anything open: a burst of
// thousands of forgets must not use up the executor's descriptors.
TEST(JobDirTest, AWaitingRemovalHoldsNoDescriptor) {
  TempDir tmp;
  auto open_fds = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                         std::filesystem::directory_iterator());
  };
  std::vector<TreeRemoval> waiting;
  for (int i = 0; i < 50; ++i) {
    const std::string dir = tmp.path() + "/" + std::to_string(i);
    ASSERT_TRUE(CreateJobDir(dir, std::nullopt, "{}\n"));
  }
  const auto before = open_fds();
  for (int i = 0; i < 50; ++i)
    waiting.emplace_back(tmp.path() + "/" + std::to_string(i), std::nullopt);
  EXPECT_EQ(open_fds(), before);
  for (TreeRemoval& removal : waiting) {
    std::size_t budget = 100;
    ASSERT_TRUE(removal.Step(budget));
  }
  EXPECT_EQ(open_fds(), before) << "a finished removal kept a descriptor";
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/0"));
}

}  // namespace
}  // namespace hpcb::executor

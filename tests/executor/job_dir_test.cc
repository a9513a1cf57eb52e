#include "executor/job_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

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

TEST(JobDirTest, RemoveTakesWhatRootMadeAndTheDir) {
  TempDir tmp;
  std::string dir = tmp.path() + "/1";
  ASSERT_TRUE(CreateJobDir(dir, std::nullopt, "{}\n", /*error_buffer=*/true));
  WriteText(dir + "/.info.json.tmp", "{}");

  Result<UniqueFd> left = RemoveJobDir(dir);

  ASSERT_TRUE(left) << left.error().message();
  EXPECT_FALSE(left->valid()) << "nothing is left for the user's helper";
  EXPECT_FALSE(std::filesystem::exists(dir));
  Result<UniqueFd> again = RemoveJobDir(dir);
  ASSERT_TRUE(again) << "removing what is gone is fine";
  EXPECT_FALSE(again->valid());
}

// Root never looks below the names it made: what the user added stays,
// and the dir's fd is handed back for a helper that is the user.
TEST(JobDirTest, RemoveLeavesWhatTheUserAddedAndHandsBackTheDir) {
  TempDir tmp;
  std::string dir = tmp.path() + "/1";
  ASSERT_TRUE(CreateJobDir(dir, std::nullopt, "{}\n"));
  WriteText(dir + "/junk/a", "x");
  std::string outside = tmp.path() + "/outside";
  WriteText(outside + "/keep", "keep\n");
  ASSERT_EQ(::unlink((dir + "/output").c_str()), 0);
  ASSERT_EQ(::symlink(outside.c_str(), (dir + "/output").c_str()), 0);

  Result<UniqueFd> left = RemoveJobDir(dir);

  ASSERT_TRUE(left) << left.error().message();
  ASSERT_TRUE(left->valid());
  struct stat by_fd {
  }, by_name{};
  ASSERT_EQ(::fstat(left->get(), &by_fd), 0);
  ASSERT_EQ(::stat(dir.c_str(), &by_name), 0);
  EXPECT_EQ(by_fd.st_ino, by_name.st_ino) << "the fd is the job dir";
  EXPECT_EQ(ReadText(dir + "/junk/a"), "x");
  EXPECT_FALSE(std::filesystem::exists(dir + "/info.json"));
  EXPECT_FALSE(std::filesystem::is_symlink(dir + "/output")) << "the planted link went as a name";
  EXPECT_EQ(ReadText(outside + "/keep"), "keep\n");
}

}  // namespace
}  // namespace hpcb::executor

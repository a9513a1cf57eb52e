#include "launcher/user_ops.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/base/unique_fd.h"
#include "launcher/user_helper.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::launcher {
namespace {

TEST(DeliverTest, CopiesWholeBufferAndTruncates) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/buffer", "hello\nworld\n");
  testing::WriteText(dir.path() + "/dest", "old content that is longer than the new one\n");
  UniqueFd buffer(::open((dir.path() + "/buffer").c_str(), O_RDONLY));
  ASSERT_TRUE(DeliverHere(buffer.get(), dir.path() + "/dest", 1 << 20));
  EXPECT_EQ(testing::ReadText(dir.path() + "/dest"), "hello\nworld\n");
}

TEST(DeliverTest, SymlinkAtDestinationIsNotFollowed) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/buffer", "secret?\n");
  testing::WriteText(dir.path() + "/victim", "untouched");
  ASSERT_EQ(::symlink((dir.path() + "/victim").c_str(), (dir.path() + "/dest").c_str()), 0);
  UniqueFd buffer(::open((dir.path() + "/buffer").c_str(), O_RDONLY));
  auto delivered = DeliverHere(buffer.get(), dir.path() + "/dest", 1 << 20);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().message().find("symbolic link"), std::string::npos)
      << delivered.error().message();
  EXPECT_EQ(testing::ReadText(dir.path() + "/victim"), "untouched");
}

TEST(CheckIdentityTest, RootRefusesZeroIds) {
  protocol::UserIdentity who{0, 100, "x", {}};
  EXPECT_FALSE(CheckIdentityAllowed(who, true));
  who = {100, 0, "x", {}};
  EXPECT_FALSE(CheckIdentityAllowed(who, true));
  who = {100, 100, "x", {0}};
  EXPECT_FALSE(CheckIdentityAllowed(who, true));
  who = {100, 100, "x", {100}};
  EXPECT_TRUE(CheckIdentityAllowed(who, true));
  who = {::getuid() + 1, 100, "x", {}};
  EXPECT_FALSE(CheckIdentityAllowed(who, false));
}

TEST(DropIdentityTest, RefusesZeroAndNoChangeIsNoOp) {
  EXPECT_EQ(DropIdentity(false, 0, 0, nullptr, 0), 0);
  EXPECT_NE(DropIdentity(true, 0, 5, nullptr, 0), 0);
  EXPECT_NE(DropIdentity(true, 5, 0, nullptr, 0), 0);
}

// After the drop the process is the user's but its memory is still a copy
// of root's: it must be non-dumpable (no trace, no core) and deaf to every
// signal the user could send it, whatever fs.suid_dumpable says. (On a
// host at 0 the kernel already makes it non-dumpable at the id change; the
// explicit seal matters at 2, which a test cannot set for the machine.)
TEST(DropIdentityTest, LeavesTheProcessNonDumpableWithEverySignalBlocked) {
  if (::geteuid() != 0) GTEST_SKIP() << "changing identity needs root";
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    const gid_t groups[] = {65534};
    int answer[3] = {DropIdentity(true, 65534, 65534, groups, 1), -1, -1};
    answer[1] = ::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    sigset_t blocked;
    ::sigprocmask(SIG_BLOCK, nullptr, &blocked);
    answer[2] = sigismember(&blocked, SIGQUIT) + sigismember(&blocked, SIGSEGV) +
                sigismember(&blocked, SIGTSTP);
    (void)!::write(pipe_fds[1], answer, sizeof answer);
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  int answer[3] = {-1, -1, -1};
  EXPECT_EQ(::read(pipe_fds[0], answer, sizeof answer), static_cast<ssize_t>(sizeof answer));
  ::close(pipe_fds[0]);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(answer[0], 0) << std::strerror(answer[0]);
  EXPECT_EQ(answer[1], 0) << "the process is still dumpable";
  EXPECT_EQ(answer[2], 3) << "a signal the user may send is not blocked";
}

TEST(DeliverTest, AFifoAtTheDestinationIsRefusedWithoutBlocking) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/buffer", "out\n");
  ASSERT_EQ(::mkfifo((dir.path() + "/dest").c_str(), 0600), 0);
  UniqueFd buffer(::open((dir.path() + "/buffer").c_str(), O_RDONLY));
  auto delivered = DeliverHere(buffer.get(), dir.path() + "/dest", 1 << 20);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().message().find("not a regular file"), std::string::npos)
      << delivered.error().message();
}

TEST(DeliverTest, OutputOverTheLimitIsNotDeliveredAndLeavesNothing) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/buffer", std::string(5000, 'x'));
  UniqueFd buffer(::open((dir.path() + "/buffer").c_str(), O_RDONLY));
  auto delivered = DeliverHere(buffer.get(), dir.path() + "/dest", 4096);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().message().find("over the delivery limit"), std::string::npos)
      << delivered.error().message();
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1)
      << "only the buffer: no destination, no temp file";
}

TEST(DeliverTest, AnotherFileHardLinkedAtTheDestinationIsRefused) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/buffer", "new\n");
  testing::WriteText(dir.path() + "/other", "other\n");
  ASSERT_EQ(::link((dir.path() + "/other").c_str(), (dir.path() + "/dest").c_str()), 0);
  UniqueFd buffer(::open((dir.path() + "/buffer").c_str(), O_RDONLY));
  auto delivered = DeliverHere(buffer.get(), dir.path() + "/dest", 1 << 20);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().message().find("hard links"), std::string::npos);
  EXPECT_EQ(testing::ReadText(dir.path() + "/other"), "other\n");
}

TEST(UserHelperTest, AnswersComeBackThroughThePipeWithTheirCode) {
  protocol::UserIdentity who{::getuid(), ::getgid(), "me", {}};
  auto run = [&](const HelperBody& body) -> Result<std::string> {
    Result<HelperChild> child = StartUserHelper(who, false, {}, body);
    if (!child) return child.error();
    std::string text;
    char buf[256];
    for (ssize_t n; (n = ::read(child->answer.get(), buf, sizeof buf)) > 0;)
      text.append(buf, n);
    int status = 0;
    ::waitpid(child->pid, &status, 0);
    return ParseHelperAnswer(text);
  };
  Result<std::string> ok =
      run([](const std::vector<int>&) -> Result<std::string> { return std::string("fine"); });
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(*ok, "fine");
  Result<std::string> bad = run([](const std::vector<int>&) -> Result<std::string> {
    return Error(ErrorCode::kPermissionDenied, "nope");
  });
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), "nope");
  EXPECT_EQ(bad.error().code(), ErrorCode::kPermissionDenied);
  EXPECT_FALSE(ParseHelperAnswer(""));
  EXPECT_EQ(ParseHelperAnswer("").error().message(), "the user helper died without an answer");
}

// NotifyHere in a helper of our own (it changes its process's directory
// and signal mask); its answer, and how long it took.
struct HookRun {
  Result<std::string> answer;
  std::chrono::steady_clock::duration took;
};
HookRun RunHookInHelper(const protocol::NotifyRequest& hook, std::chrono::seconds limit) {
  protocol::UserIdentity who{::getuid(), ::getgid(), "me", {}};
  const auto start = std::chrono::steady_clock::now();
  Result<HelperChild> child =
      StartUserHelper(who, false, {}, [&](const std::vector<int>&) -> Result<std::string> {
        HPCB_TRY(NotifyHere(hook, limit));
        return std::string();
      });
  if (!child) return {child.error(), {}};
  std::string text;
  char buf[256];
  for (ssize_t n; (n = ::read(child->answer.get(), buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<std::size_t>(n));
  int status = 0;
  ::waitpid(child->pid, &status, 0);
  return {ParseHelperAnswer(text), std::chrono::steady_clock::now() - start};
}

TEST(NotifyTest, RunsTheCommandInItsDirectoryWithOnlyItsEnvironment) {
  testing::TempDir dir;
  const protocol::NotifyRequest hook{.id = 3,
                                     .command = "pwd > where; env > env; read line; echo $? > in",
                                     .cwd = dir.path(),
                                     .env = {"HPC_BATCH_JOB_ID=3", "PATH=/usr/bin:/bin"}};

  HookRun run = RunHookInHelper(hook, std::chrono::seconds(10));

  ASSERT_TRUE(run.answer) << run.answer.error().message();
  EXPECT_EQ(testing::ReadText(dir.path() + "/where"), dir.path() + "\n");
  const std::string env = testing::ReadText(dir.path() + "/env");
  EXPECT_NE(env.find("HPC_BATCH_JOB_ID=3\n"), std::string::npos) << env;
  EXPECT_EQ(env.find("HOME="), std::string::npos) << env;
  EXPECT_EQ(testing::ReadText(dir.path() + "/in"), "1\n") << "stdin is /dev/null";
}

TEST(NotifyTest, AFailureSaysHowItEnded) {
  testing::TempDir dir;
  protocol::NotifyRequest hook{.id = 3, .command = "exit 3", .cwd = dir.path()};

  HookRun exited = RunHookInHelper(hook, std::chrono::seconds(10));
  hook.cwd = dir.path() + "/gone";
  HookRun nowhere = RunHookInHelper(hook, std::chrono::seconds(10));

  ASSERT_FALSE(exited.answer);
  EXPECT_EQ(exited.answer.error().message(), "exited 3");
  ASSERT_FALSE(nowhere.answer);
  EXPECT_NE(nowhere.answer.error().message().find("could not enter " + hook.cwd), std::string::npos)
      << nowhere.answer.error().message();
}

TEST(NotifyTest, ACommandPastItsLimitIsKilledWithWhatItLeftRunning) {
  testing::TempDir dir;
  const protocol::NotifyRequest hook{
      .id = 3, .command = "sleep 30 & echo $! > bg; wait; touch survived", .cwd = dir.path()};

  HookRun run = RunHookInHelper(hook, std::chrono::seconds(1));

  ASSERT_FALSE(run.answer);
  EXPECT_EQ(run.answer.error().message(), "was killed after 1 s");
  EXPECT_LT(run.took, std::chrono::seconds(5));
  const pid_t background = std::stoi(testing::ReadText(dir.path() + "/bg"));
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    const std::string stat = "/proc/" + std::to_string(background) + "/stat";
    gone =
        !std::filesystem::exists(stat) || testing::ReadText(stat).find(") Z ") != std::string::npos;
    if (!gone) ::usleep(20000);
  }
  EXPECT_TRUE(gone) << "the background sleep outlived the command";
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/survived"));
}

// A forgotten job's dir, emptied as its user: everything below goes, the
// dir itself stays (root removes its name).
TEST(EmptyDirTest, EmptiesANestedTreeAndKeepsTheDir) {
  testing::TempDir dir;
  const std::string top = dir.path() + "/7";
  testing::WriteText(top + "/output", "x");
  testing::WriteText(top + "/a/b/c/deep", "x");
  testing::WriteText(top + "/a/.hidden", "x");
  std::filesystem::create_directories(top + "/empty/too");
  UniqueFd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY));

  Result<void> emptied = EmptyDirHere(fd.get());

  ASSERT_TRUE(emptied) << emptied.error().message();
  ASSERT_TRUE(std::filesystem::is_directory(top));
  EXPECT_TRUE(std::filesystem::is_empty(top));
}

TEST(EmptyDirTest, ALinkToOutsideGoesAsALinkAndWhatItPointsAtStays) {
  testing::TempDir dir;
  const std::string top = dir.path() + "/7";
  const std::string outside = dir.path() + "/outside";
  testing::WriteText(outside + "/keep", "keep\n");
  std::filesystem::create_directories(top + "/a");
  ASSERT_EQ(::symlink(outside.c_str(), (top + "/dirlink").c_str()), 0);
  ASSERT_EQ(::symlink((outside + "/keep").c_str(), (top + "/a/filelink").c_str()), 0);
  UniqueFd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY));

  Result<void> emptied = EmptyDirHere(fd.get());

  ASSERT_TRUE(emptied) << emptied.error().message();
  EXPECT_TRUE(std::filesystem::is_empty(top));
  EXPECT_EQ(testing::ReadText(outside + "/keep"), "keep\n");
}

TEST(EmptyDirTest, ATreeDeeperThanTheBoundStaysAndIsNamed) {
  testing::TempDir dir;
  const std::string top = dir.path() + "/7";
  std::filesystem::create_directories(top);
  testing::WriteText(top + "/shallow", "x");
  UniqueFd level(::open(top.c_str(), O_RDONLY | O_DIRECTORY));
  for (int i = 0; i <= kMaxEmptyDepth; ++i) {
    ASSERT_EQ(::mkdirat(level.get(), "d", 0700), 0);
    level.reset(::openat(level.get(), "d", O_RDONLY | O_DIRECTORY));
    ASSERT_TRUE(level.valid());
  }
  UniqueFd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY));

  Result<void> emptied = EmptyDirHere(fd.get());

  ASSERT_FALSE(emptied);
  EXPECT_NE(emptied.error().message().find("d/d/d/"), std::string::npos)
      << emptied.error().message();
  EXPECT_NE(emptied.error().message().find("nested too deep"), std::string::npos)
      << emptied.error().message();
  EXPECT_FALSE(std::filesystem::exists(top + "/shallow"));
  EXPECT_TRUE(std::filesystem::is_directory(top + "/d"));
}

}  // namespace
}  // namespace hpcb::launcher

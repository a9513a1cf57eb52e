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

// The helper as the launcher runs it: hpc-batch-as-user exec'd after the
// (here unchanged) identity drop, answering on the pipe.
Result<void> RunHelper(std::vector<std::string> request, std::vector<std::string> env = {},
                       std::vector<int> keep = {}, int program = -1) {
  protocol::UserIdentity who{::getuid(), ::getgid(), "me", {}};
  UniqueFd binary(::open(HPCB_AS_USER_BIN, O_PATH | O_CLOEXEC));
  request.insert(request.begin(), "hpc-batch-as-user");
  Result<HelperChild> child = StartUserHelper(
      who, false, std::move(keep), {program >= 0 ? program : binary.get(), request, env});
  if (!child) return child.error();
  std::string text;
  char buf[256];
  for (ssize_t n; (n = ::read(child->answer.get(), buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<std::size_t>(n));
  int status = 0;
  ::waitpid(child->pid, &status, 0);
  return ParseHelperAnswer(text);
}

TEST(UserHelperTest, AnswersComeBackThroughThePipeWithTheirCode) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/buffer", "out\n");
  UniqueFd buffer(::open((dir.path() + "/buffer").c_str(), O_RDONLY | O_CLOEXEC));

  Result<void> delivered = RunHelper({"deliver", dir.path() + "/dest", "1024"}, {}, {buffer.get()});
  Result<void> refused = RunHelper({"deliver", dir.path() + "/dest2", "2"}, {}, {buffer.get()});
  Result<void> unknown = RunHelper({"format-disk"});

  ASSERT_TRUE(delivered) << delivered.error().message();
  EXPECT_EQ(testing::ReadText(dir.path() + "/dest"), "out\n");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kResourceExhausted);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(ParseHelperAnswer(""));
  EXPECT_EQ(ParseHelperAnswer("").error().message(), "the user helper died without an answer");
}

TEST(UserHelperTest, AProgramThatCannotRunIsAnsweredAsSuch) {
  UniqueFd not_a_program(::open("/dev/null", O_PATH | O_CLOEXEC));
  Result<void> run = RunHelper({"empty"}, {}, {}, not_a_program.get());
  ASSERT_FALSE(run);
  EXPECT_NE(run.error().message().find("cannot run hpc-batch-as-user"), std::string::npos)
      << run.error().message();
}

// A --notify command, run as the launcher runs it; its answer, and how
// long it took.
struct HookRun {
  Result<void> answer;
  std::chrono::steady_clock::duration took;
};
HookRun RunHook(const protocol::NotifyRequest& hook, std::chrono::seconds limit) {
  const auto start = std::chrono::steady_clock::now();
  Result<void> answer =
      RunHelper({"notify", hook.cwd, std::to_string(limit.count()), hook.command}, hook.env);
  return {answer, std::chrono::steady_clock::now() - start};
}

TEST(NotifyTest, RunsTheCommandInItsDirectoryWithOnlyItsEnvironment) {
  testing::TempDir dir;
  const protocol::NotifyRequest hook{.id = 3,
                                     .command = "pwd > where; env > env; read line; echo $? > in",
                                     .cwd = dir.path(),
                                     .env = {"HPC_BATCH_JOB_ID=3", "PATH=/usr/bin:/bin"}};

  HookRun run = RunHook(hook, std::chrono::seconds(10));

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

  HookRun exited = RunHook(hook, std::chrono::seconds(10));
  hook.cwd = dir.path() + "/gone";
  HookRun nowhere = RunHook(hook, std::chrono::seconds(10));

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

  HookRun run = RunHook(hook, std::chrono::seconds(1));

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
}  // namespace
}  // namespace hpcb::launcher

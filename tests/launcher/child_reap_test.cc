#include "launcher/child_reap.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

namespace hpcb::launcher {
namespace {

using std::chrono::milliseconds;

pid_t Child(int exit_code, int sleep_s) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (sleep_s > 0) ::sleep(static_cast<unsigned>(sleep_s));
    ::_exit(exit_code);
  }
  return pid;
}

TEST(ChildReapTest, AChildThatEndsInTimeGivesItsStatus) {
  const pid_t pid = Child(3, 0);
  ASSERT_GT(pid, 0);
  const Reaped reaped = ReapWithin(pid, milliseconds(5000), milliseconds(5));
  ASSERT_EQ(reaped.how, Reaped::How::kEnded);
  ASSERT_TRUE(WIFEXITED(reaped.status));
  EXPECT_EQ(WEXITSTATUS(reaped.status), 3);
}

TEST(ChildReapTest, AChildThatOverstaysIsKilledAtTheDeadline) {
  const pid_t pid = Child(0, 30);
  ASSERT_GT(pid, 0);
  const auto start = std::chrono::steady_clock::now();
  const Reaped reaped = ReapWithin(pid, milliseconds(100), milliseconds(10));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_EQ(reaped.how, Reaped::How::kKilled);
  ASSERT_TRUE(WIFSIGNALED(reaped.status));
  EXPECT_EQ(WTERMSIG(reaped.status), SIGKILL);
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1) << "reaped: no zombie left";
}

TEST(ChildReapTest, APidThatIsNoChildOfOursIsSaidSoAtOnce) {
  const pid_t pid = Child(0, 0);
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);  // reaped elsewhere
  EXPECT_EQ(ReapWithin(pid, milliseconds(5000), milliseconds(5)).how, Reaped::How::kNotOurs);
}

}  // namespace
}  // namespace hpcb::launcher

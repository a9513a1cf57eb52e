// The launcher's keeping of its standby shepherd: one at a time, replaced
// after one that died unused only once a pause has passed, the pause
// doubling while standbys keep dying, and dismissed when asked.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "launcher/launcher_server.h"
#include "launcher/private_pages.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::launcher {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class LauncherStandbyTest : public ::testing::Test {
 protected:
  LauncherStandbyTest()
      : server_(Options(), -1, [] { return Result<RoleSet>(InvalidArgument("no roles here")); }) {}
  ~LauncherStandbyTest() override { server_.DismissStandby(); }

  LauncherOptions Options() const {
    LauncherOptions options;
    options.run_dir = dir_.path();
    return options;
  }

  // Kills the standby and lets the server reap it, within a bound.
  void KillStandby() {
    const pid_t pid = server_.standby_pid();
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (server_.standby_pid() == pid && Clock::now() < until)
      (void)server_.PollChildren(10);
    ASSERT_EQ(server_.standby_pid(), -1) << "the dead standby was not reaped";
  }

  testing::TempDir dir_;
  LauncherServer server_;
};

TEST_F(LauncherStandbyTest, OneWaitsAtATimeAndGoesWhenDismissed) {
  EXPECT_EQ(server_.standby_pid(), -1);
  server_.PrepareStandby();
  const pid_t pid = server_.standby_pid();
  ASSERT_GT(pid, 0);
  server_.PrepareStandby();
  EXPECT_EQ(server_.standby_pid(), pid);
  server_.DismissStandby();
  EXPECT_EQ(server_.standby_pid(), -1);
  // Reaped by DismissStandby itself: no such child is left.
  EXPECT_EQ(::kill(pid, 0), -1);
}

// The pause starts at 1 s and doubles: a standby that keeps dying costs a
// fork a second, then every two, ..., never one per loop turn.
TEST_F(LauncherStandbyTest, AStandbyThatDiesUnusedIsReplacedOnlyAfterADoublingPause) {
  server_.PrepareStandby();
  KillStandby();
  server_.PrepareStandby();
  EXPECT_EQ(server_.standby_pid(), -1) << "replaced at once after it died";
  std::this_thread::sleep_for(milliseconds(1100));
  server_.PrepareStandby();
  ASSERT_GT(server_.standby_pid(), 0) << "not replaced after the first pause";
  KillStandby();
  std::this_thread::sleep_for(milliseconds(1100));
  server_.PrepareStandby();
  EXPECT_EQ(server_.standby_pid(), -1) << "the second pause did not double";
  std::this_thread::sleep_for(milliseconds(1100));
  server_.PrepareStandby();
  EXPECT_GT(server_.standby_pid(), 0) << "not replaced after the second pause";
}

// The fork shares every page with the standby; the launcher takes copies
// of its own at once, so writing memory it had before the fork (a buffer
// here, a spawn's allocations in the daemon) copies nothing later.
TEST_F(LauncherStandbyTest, AfterAStandbyForkTheLauncherWritesItsMemoryWithoutFaults) {
  if (Result<std::size_t> probe = ClaimResidentPages({});
      !probe && ClaimingUnsupported(probe.error())) {
    GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  }
  constexpr std::size_t kPage = 4096;
  std::vector<char> buffer(16 * kPage, 1);  // on the heap, every page resident
  server_.PrepareStandby();
  ASSERT_GT(server_.standby_pid(), 0);
  struct rusage before {};
  ::getrusage(RUSAGE_THREAD, &before);
  for (std::size_t at = 0; at < buffer.size(); at += kPage)
    static_cast<volatile char&>(buffer[at]) = 2;
  struct rusage after {};
  ::getrusage(RUSAGE_THREAD, &after);
  EXPECT_LE(after.ru_minflt - before.ru_minflt, 2) << "the pages were left shared with the standby";
}

}  // namespace
}  // namespace hpcb::launcher

#include "launcher/signal_reset.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <vector>

#include "tests/testing/scoped_disposition.h"

namespace hpcb::launcher {
namespace {

bool Has(const std::vector<int>& signals, int sig) {
  return std::find(signals.begin(), signals.end(), sig) != signals.end();
}

void CatchNothing(int /*sig*/) {}

using testing::ScopedDisposition;

TEST(SignalResetTest, NamesIgnoredAndCaughtSignalsAndNoDefaultOne) {
  ScopedDisposition hup(SIGHUP, SIG_IGN);
  ScopedDisposition usr1(SIGUSR1, CatchNothing);
  ScopedDisposition term(SIGTERM, SIG_DFL);
  const std::vector<int> signals = SignalsNotDefault();
  EXPECT_TRUE(Has(signals, SIGHUP));
  EXPECT_TRUE(Has(signals, SIGUSR1));
  EXPECT_FALSE(Has(signals, SIGTERM));
  EXPECT_FALSE(Has(signals, SIGKILL));
}

void CatchWithInfo(int /*sig*/, siginfo_t* /*info*/, void* /*context*/) {}

TEST(SignalResetTest, NamesASigInfoHandlerToo) {
  struct sigaction act {};
  act.sa_sigaction = CatchWithInfo;
  act.sa_flags = SA_SIGINFO;
  struct sigaction old {};
  ::sigaction(SIGUSR2, &act, &old);
  const bool listed = Has(SignalsNotDefault(), SIGUSR2);
  ::sigaction(SIGUSR2, &old, nullptr);
  EXPECT_TRUE(listed);
}

TEST(SignalResetTest, ResetsTheListedSignalsOnly) {
  ScopedDisposition hup(SIGHUP, SIG_IGN);
  ScopedDisposition usr1(SIGUSR1, CatchNothing);
  const std::vector<int> only_hup{SIGHUP};
  ResetSignals(&only_hup);
  const std::vector<int> left = SignalsNotDefault();
  EXPECT_FALSE(Has(left, SIGHUP));
  EXPECT_TRUE(Has(left, SIGUSR1));
}

TEST(SignalResetTest, WithSignalsAddsEachOnce) {
  EXPECT_EQ(WithSignals({SIGHUP}, std::array<int, 1>{SIGPIPE}),
            (std::vector<int>{SIGHUP, SIGPIPE}));
  EXPECT_EQ(WithSignals({SIGPIPE}, std::array<int, 2>{SIGPIPE, SIGHUP}),
            (std::vector<int>{SIGPIPE, SIGHUP}));
}

bool IsIgnored(int sig) {
  struct sigaction current {};
  return ::sigaction(sig, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 &&
         current.sa_handler == SIG_IGN;
}

// In a child, since it changes the whole process: what the launcher was
// started with (SIGINT, SIGQUIT and SIGCHLD ignored) is undone, a handler
// this process installed itself is kept, and SIGPIPE ends up ignored.
TEST(SignalResetTest, StartUpUndoesInheritedIgnoresAndIgnoresSigpipe) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    struct sigaction caught {};
    caught.sa_handler = CatchNothing;
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGINT, SIGQUIT, SIGCHLD})
      ::sigaction(sig, &ignore, nullptr);
    ::sigaction(SIGUSR1, &caught, nullptr);
    ::sigaction(SIGPIPE, &dfl, nullptr);
    SetStartUpDispositions();
    int failures = 0;
    for (int sig : {SIGINT, SIGQUIT, SIGCHLD})
      failures += IsIgnored(sig) || Has(SignalsNotDefault(), sig) ? 1 : 0;
    failures += Has(SignalsNotDefault(), SIGUSR1) ? 0 : 10;
    failures += IsIgnored(SIGPIPE) ? 0 : 20;
    ::_exit(failures);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1-3: an inherited ignore was kept; 10: a handler was reset; 20: SIGPIPE not ignored";
}

}  // namespace
}  // namespace hpcb::launcher

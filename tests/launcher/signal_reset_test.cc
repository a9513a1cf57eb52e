#include "launcher/signal_reset.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace hpcb::launcher {
namespace {

bool Has(const std::vector<int>& signals, int sig) {
  return std::find(signals.begin(), signals.end(), sig) != signals.end();
}

// The signals whose disposition in this process is not SIG_DFL (a
// SA_SIGINFO handler shares sa_handler's storage, so it shows too).
std::vector<int> SignalsNotDefault() {
  std::vector<int> signals;
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler != SIG_DFL)
      signals.push_back(sig);
  }
  return signals;
}

void CatchNothing(int /*sig*/) {}

// In a child, since it changes the whole process: ignored and caught
// signals alike end at SIG_DFL.
TEST(SignalResetTest, ResetAllPutsIgnoredAndCaughtSignalsBackToTheDefault) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    struct sigaction caught {};
    caught.sa_handler = CatchNothing;
    for (int sig : {SIGHUP, SIGPIPE, SIGCHLD})
      ::sigaction(sig, &ignore, nullptr);
    ::sigaction(SIGUSR1, &caught, nullptr);
    const bool changed = Has(SignalsNotDefault(), SIGHUP) && Has(SignalsNotDefault(), SIGUSR1);
    ResetAllSignals();
    ::_exit(!changed ? 2 : SignalsNotDefault().empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
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

#include "launcher/signal_reset.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
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

// Runs `body` in a forked child, since it changes the whole process'
// dispositions, and returns its exit status (its return value), or -1.
int RunInChild(const std::function<int()>& body) {
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) ::_exit(body());
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

void Set(int sig, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  ::sigaction(sig, &action, nullptr);
}

// Ignored and caught signals alike end at SIG_DFL.
TEST(SignalResetTest, ResetAllPutsIgnoredAndCaughtSignalsBackToTheDefault) {
  EXPECT_EQ(RunInChild([] {
              for (int sig : {SIGHUP, SIGPIPE, SIGCHLD})
                Set(sig, SIG_IGN);
              Set(SIGUSR1, CatchNothing);
              if (!Has(SignalsNotDefault(), SIGHUP) || !Has(SignalsNotDefault(), SIGUSR1)) return 2;
              ResetAllSignals();
              return SignalsNotDefault().empty() ? 0 : 1;
            }),
            0)
      << "1: a signal was not reset; 2: the set-up did not take";
}

bool IsIgnored(int sig) {
  struct sigaction current {};
  return ::sigaction(sig, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 &&
         current.sa_handler == SIG_IGN;
}

// What the launcher was started with (SIGINT, SIGQUIT and SIGCHLD ignored) is undone, a handler
// this process installed itself is kept, and SIGPIPE ends up ignored.
TEST(SignalResetTest, StartUpUndoesInheritedIgnoresAndIgnoresSigpipe) {
  EXPECT_EQ(RunInChild([] {
              for (int sig : {SIGINT, SIGQUIT, SIGCHLD})
                Set(sig, SIG_IGN);
              Set(SIGUSR1, CatchNothing);
              Set(SIGPIPE, SIG_DFL);
              SetStartUpDispositions();
              int failures = 0;
              for (int sig : {SIGINT, SIGQUIT, SIGCHLD})
                failures += IsIgnored(sig) || Has(SignalsNotDefault(), sig) ? 1 : 0;
              failures += Has(SignalsNotDefault(), SIGUSR1) ? 0 : 10;
              failures += IsIgnored(SIGPIPE) ? 0 : 20;
              return failures;
            }),
            0)
      << "1-3: an inherited ignore was kept; 10: a handler was reset; 20: SIGPIPE not ignored";
}

}  // namespace
}  // namespace hpcb::launcher

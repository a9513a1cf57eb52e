#include "launcher/signal_reset.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <vector>

namespace hpcb::launcher {
namespace {

bool Has(const std::vector<int>& signals, int sig) {
  return std::find(signals.begin(), signals.end(), sig) != signals.end();
}

void CatchNothing(int /*sig*/) {}

// Sets one disposition for the life of the object.
class Disposition {
 public:
  Disposition(int sig, void (*handler)(int)) : sig_(sig) {
    struct sigaction act {};
    act.sa_handler = handler;
    ::sigaction(sig_, &act, &old_);
  }
  ~Disposition() { ::sigaction(sig_, &old_, nullptr); }
  Disposition(const Disposition&) = delete;
  Disposition& operator=(const Disposition&) = delete;

 private:
  int sig_;
  struct sigaction old_ {};
};

TEST(SignalResetTest, NamesIgnoredAndCaughtSignalsAndNoDefaultOne) {
  Disposition hup(SIGHUP, SIG_IGN);
  Disposition usr1(SIGUSR1, CatchNothing);
  Disposition term(SIGTERM, SIG_DFL);
  const std::vector<int> signals = SignalsNotDefault();
  EXPECT_TRUE(Has(signals, SIGHUP));
  EXPECT_TRUE(Has(signals, SIGUSR1));
  EXPECT_FALSE(Has(signals, SIGTERM));
  EXPECT_FALSE(Has(signals, SIGKILL));
}

TEST(SignalResetTest, ResetsTheListedSignalsOnly) {
  Disposition hup(SIGHUP, SIG_IGN);
  Disposition usr1(SIGUSR1, CatchNothing);
  const std::vector<int> only_hup{SIGHUP};
  ResetSignals(&only_hup);
  const std::vector<int> left = SignalsNotDefault();
  EXPECT_FALSE(Has(left, SIGHUP));
  EXPECT_TRUE(Has(left, SIGUSR1));
}

TEST(SignalResetTest, WithSignalAddsOnce) {
  EXPECT_EQ(WithSignal({SIGHUP}, SIGPIPE), (std::vector<int>{SIGHUP, SIGPIPE}));
  EXPECT_EQ(WithSignal({SIGPIPE}, SIGPIPE), (std::vector<int>{SIGPIPE}));
}

}  // namespace
}  // namespace hpcb::launcher

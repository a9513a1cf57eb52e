#include "launcher/signal_reset.h"

#include <signal.h>

#include <algorithm>

namespace hpcb::launcher {

std::vector<int> SignalsNotDefault() {
  std::vector<int> signals;
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction current {};
    // Numbers the kernel does not know (32 and 33 belong to glibc) fail
    // here and are skipped: nothing could have changed them.
    if (::sigaction(sig, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL)
      signals.push_back(sig);
  }
  return signals;
}

std::vector<int> WithSignal(std::vector<int> signals, int sig) {
  if (std::find(signals.begin(), signals.end(), sig) == signals.end()) signals.push_back(sig);
  return signals;
}

void ResetSignals(const std::vector<int>* signals) noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  if (signals == nullptr) {
    for (int sig = 1; sig < NSIG; ++sig)
      (void)::sigaction(sig, &dfl, nullptr);
    return;
  }
  for (int sig : *signals)
    (void)::sigaction(sig, &dfl, nullptr);
}

}  // namespace hpcb::launcher

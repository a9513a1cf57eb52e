#include "launcher/signal_reset.h"

#include <signal.h>

namespace hpcb::launcher {

void SetStartUpDispositions() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction current {};
    // glibc refuses 32 and 33 (its own); nothing here could have set them.
    if (::sigaction(sig, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_IGN)
      (void)::sigaction(sig, &dfl, nullptr);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  (void)::sigaction(SIGPIPE, &ignore, nullptr);
}

std::vector<int> SignalsNotDefault() {
  std::vector<int> signals;
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL)
      signals.push_back(sig);
  }
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

#include "launcher/signal_reset.h"

#include <signal.h>

#include <algorithm>

namespace hpcb::launcher {
namespace {

// This process's handler for `sig` (sa_handler and sa_sigaction share
// storage, so a SA_SIGINFO handler shows here too); SIG_ERR for a number
// glibc refuses (32 and 33, its own: nothing here could have set them).
sighandler_t CurrentHandler(int sig) {
  struct sigaction current {};
  if (::sigaction(sig, nullptr, &current) != 0) return SIG_ERR;
  return current.sa_handler;
}

}  // namespace

void SetStartUpDispositions() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (CurrentHandler(sig) == SIG_IGN) (void)::sigaction(sig, &dfl, nullptr);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  (void)::sigaction(SIGPIPE, &ignore, nullptr);
}

std::vector<int> SignalsNotDefault() {
  std::vector<int> signals;
  for (int sig = 1; sig < NSIG; ++sig) {
    const sighandler_t handler = CurrentHandler(sig);
    if (handler != SIG_ERR && handler != SIG_DFL) signals.push_back(sig);
  }
  return signals;
}

std::vector<int> WithSignals(std::vector<int> signals, std::span<const int> more) {
  for (int sig : more) {
    if (std::find(signals.begin(), signals.end(), sig) == signals.end()) signals.push_back(sig);
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

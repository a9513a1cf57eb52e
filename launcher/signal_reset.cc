#include "launcher/signal_reset.h"

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

void ResetAllSignals() noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig)
    (void)::sigaction(sig, &dfl, nullptr);
}

}  // namespace hpcb::launcher

// Which signal dispositions a job child must put back before it execs.
//
// execve resets a caught signal to SIG_DFL itself, but an ignored one stays
// ignored in the new program, and a job that starts with SIGINT or SIGHUP
// ignored (as a daemon started from a script or by nohup would pass on)
// behaves unlike the same command run by hand. A caught signal matters too:
// between clearing its mask and execve the child would run the launcher's
// handler. So every disposition that is not SIG_DFL is reset.
//
// The bargain: asking the kernel about all 64 signals in every job child
// cost 64 system calls on the way from a spawn to the job's execve. The
// launcher takes its signals through a signalfd and never changes a
// disposition after start-up, so it asks once (SignalsNotDefault) and each
// shepherd adds the SIGPIPE it ignores itself; the job child resets only
// those (ResetSignals).
#ifndef HPCB_LAUNCHER_SIGNAL_RESET_H_
#define HPCB_LAUNCHER_SIGNAL_RESET_H_

#include <vector>

namespace hpcb::launcher {

// The signals whose disposition in this process is not SIG_DFL.
std::vector<int> SignalsNotDefault();

// `signals` plus `sig`, once.
std::vector<int> WithSignal(std::vector<int> signals, int sig);

// Async-signal-safe, for a forked child: sets each of `signals` to SIG_DFL,
// or every signal when `signals` is null (a caller that never looked).
void ResetSignals(const std::vector<int>* signals) noexcept;

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_SIGNAL_RESET_H_

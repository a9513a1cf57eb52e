// Signal dispositions: the launcher's own at start-up, and which ones a job
// child must put back before it execs.
//
// Start-up: whatever started the launcher decides nothing. A shell's
// background job ignores SIGINT and SIGQUIT, nohup ignores SIGHUP, a
// service manager may ignore SIGPIPE, and a parent that ignores SIGCHLD
// would have the kernel reap every child unasked, so that no shepherd's
// wait4 would see its job's exit. Only ignored dispositions survive an
// exec (a handler here was installed by this process's own runtime, such
// as a sanitizer's), so those go back to SIG_DFL; then SIGPIPE is ignored,
// since a peer that is gone is an error to handle, not a reason to die.
//
// The job child: execve resets a caught signal to SIG_DFL itself, but an
// ignored one stays ignored in the new program, and a job that starts with
// a signal ignored behaves unlike the same command run by hand. A caught
// signal matters too: between clearing its mask and execve the child would
// run the handler. So every disposition that is not SIG_DFL is reset.
//
// The bargain: setting all 64 costs every job child 62 system calls (glibc
// refuses 32 and 33, its own), some tens of microseconds before its
// execve, against a launcher that would otherwise have to track which
// dispositions it and each shepherd changed.
#ifndef HPCB_LAUNCHER_SIGNAL_RESET_H_
#define HPCB_LAUNCHER_SIGNAL_RESET_H_

#include <signal.h>

#include <array>

namespace hpcb::launcher {

// What a shepherd sets to SIG_IGN for itself (job_shepherd.cc).
inline constexpr std::array<int, 1> kShepherdIgnores{SIGPIPE};

// For the launcher, first thing: every ignored disposition back to SIG_DFL,
// then SIGPIPE ignored (above).
void SetStartUpDispositions();

// Async-signal-safe, for a forked child: every signal to SIG_DFL.
void ResetAllSignals() noexcept;

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_SIGNAL_RESET_H_

// Reaping a child of the launcher within a deadline: the launcher's own
// loop waits on a signalfd, so a short-lived child it makes on the side (a
// start-up probe, a role being stopped) is polled for, never waited on
// without a bound, and killed when it overstays.
#ifndef HPCB_LAUNCHER_CHILD_REAP_H_
#define HPCB_LAUNCHER_CHILD_REAP_H_

#include <sys/types.h>

#include <chrono>

namespace hpcb::launcher {

struct Reaped {
  enum class How {
    kEnded,    // it ended in time; `status` is its wait status
    kKilled,   // it did not: SIGKILLed at the deadline and reaped
    kNotOurs,  // no such child (reaped elsewhere already)
  };
  How how = How::kEnded;
  int status = 0;
};

// Polls every `step` for `pid` to end; past `deadline`, SIGKILLs and reaps it.
Reaped ReapWithin(pid_t pid, std::chrono::milliseconds deadline, std::chrono::milliseconds step);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_CHILD_REAP_H_

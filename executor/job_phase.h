// A job's phase on the root side, and the one table of which operation
// each phase allows (in the spirit of OpenSSH's monitor table): every
// operation on a job is checked against it before anything is touched, and
// one that is not allowed in the job's phase is refused with a message that
// names both. The phase is derived in one place (ExecutorServer::PhaseOf)
// from the job's spec and the one in-flight step it may have.
#ifndef HPCB_EXECUTOR_JOB_PHASE_H_
#define HPCB_EXECUTOR_JOB_PHASE_H_

#include <cstdint>
#include <string_view>

#include "common/base/result.h"

namespace hpcb::executor {

enum class JobPhase {
  kUnknown,    // no spec, no registration in flight
  kQueued,     // registered, waiting for a start
  kStarting,   // spawn in flight
  kRunning,    // its shepherd and processes are out there
  kFinishing,  // ending or delivering its output (a delivery in flight)
  kEnded,      // exited; its output kept or delivered
};

// What the broker (or the executor's own timers) may ask of a job.
enum class JobOperation {
  kRegister,      // broker: a new job from a client connection
  kStart,         // broker: spawn it
  kSignal,        // broker: SIGTERM/SIGKILL its process group
  kForget,        // broker: remove its spec, dir and output
  kOpenOutput,    // broker: a read-only descriptor of its buffer
  kDeliverAgain,  // broker, or the retry timer: copy its output out again
  kFinish,        // launcher event or poll: its shepherd has exited
};

std::string_view NameOf(JobPhase phase);
std::string_view NameOf(JobOperation operation);

// Whether `operation` is allowed on job `id` in `phase`; the error says
// which phase the job is in and which it would need to be in (not found
// for an unknown job, a failed precondition otherwise).
Result<void> CheckPhase(JobOperation operation, JobPhase phase, std::uint64_t id);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_JOB_PHASE_H_

// A job's state and why it ended, as users see them (`dispatch list`, the
// queue file). Wire enums (codec.h): written as their names.
#ifndef HPCB_PROTOCOL_JOB_STATE_H_
#define HPCB_PROTOCOL_JOB_STATE_H_

#include <array>
#include <string_view>
#include <utility>

#include "protocol/codec.h"

namespace hpcb::protocol {

HPCB_WIRE_ENUM(JobState, (kQueued, "queued"), (kRunning, "running"), (kDone, "done"));

// Why a job ended other than by exiting on its own. kDependency: a job
// it waited for (`--after`) did not succeed, so it never ran.
HPCB_WIRE_ENUM(JobReason, (kKilled, "killed"), (kTimeout, "timeout"), (kError, "error"),
               (kOom, "oom"), (kDependency, "dependency"));

// What `dispatch kill` did.
HPCB_WIRE_ENUM(KillOutcome, (kRemoved, "removed"), (kKilling, "killing"));

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_JOB_STATE_H_

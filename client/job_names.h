// `kill`, `wait` and `attach --name NAME`: which of the caller's own jobs
// with that name each acts on, from the jobs the backend found
// (Backend::JobsNamed). Names need not be unique; nothing here runs a
// program or asks the daemon.
#ifndef HPCB_CLIENT_JOB_NAMES_H_
#define HPCB_CLIENT_JOB_NAMES_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "protocol/client_messages.h"

namespace hpcb::client {

enum class NamedUse { kKill, kWait, kAttach };

// Of `rows`, those named `name`, in id order:
// - kKill: every queued or running one; kFailedPrecondition when all have
//   finished (as `kill ID` of a finished job).
// - kWait: every queued or running one or, when none is, the newest
//   finished one, so that `new --name x ...; wait --name x` cannot miss a
//   job that ended in between.
// - kAttach: as kWait, but it follows one job: kFailedPrecondition, listing
//   the ids, when several are queued or running.
// kNotFound when no row has the name.
Result<std::vector<std::uint64_t>> JobsForName(const std::vector<protocol::JobRow>& rows,
                                               std::string_view name, NamedUse use);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_JOB_NAMES_H_

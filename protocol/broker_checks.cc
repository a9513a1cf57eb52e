// The Validate() of the messages only the broker decodes: the executor's
// replies and events (executor_messages.h) and the usage they carry
// (job_usage.h). Declared with their messages; defined here, in
// hpcb_client_protocol, so that the root binaries, which only encode these
// messages, are not built from checks they never run. A root binary that
// decoded one of them would fail to link.
#include <cmath>

#include "protocol/executor_messages.h"
#include "protocol/job_usage.h"

namespace hpcb::protocol {

Result<void> JobUsage::Validate() const {
  for (double seconds : {wall_s, user_s, system_s}) {
    if (!std::isfinite(seconds) || seconds < 0) {
      return InvalidArgument("usage times must be finite and not negative");
    }
  }
  return Ok();
}

Result<void> ListJobsReply::Validate() const {
  if (jobs.size() > ListJobs::kMaxLimit) return InvalidArgument("a page holds too many jobs");
  return Ok();
}

Result<void> RegisterReply::Validate() const {
  if (start && starting) return InvalidArgument("a start cannot be both ended and under way");
  return Ok();
}

Result<void> JobExited::Validate() const {
  return usage ? usage->Validate() : Ok();
}

}  // namespace hpcb::protocol

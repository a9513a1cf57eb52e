#include "broker/job_record.h"

#include <set>

namespace hpcb::broker {

Result<void> JobRecord::Validate() const {
  if (id == 0) return InvalidArgument("job id must be positive");
  if (demand.cpu < 1 || demand.gpus < 0) {
    return InvalidArgument("job " + std::to_string(id) + " has a bad resource demand");
  }
  return Ok();
}

Result<void> QueueFile::Validate() const {
  std::set<std::uint64_t> seen;
  for (const JobRecord& job : jobs) {
    if (!seen.insert(job.id).second) {
      return InvalidArgument("job " + std::to_string(job.id) + " appears twice");
    }
  }
  return Ok();
}

}  // namespace hpcb::broker

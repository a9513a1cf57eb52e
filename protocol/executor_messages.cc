#include "protocol/executor_messages.h"

namespace hpcb::protocol {

Result<void> Hello::Validate() const {
  if (version != kProtocolVersion) {
    return InvalidArgument("protocol version " + std::to_string(version) + " is not " +
                           std::to_string(kProtocolVersion));
  }
  if (gpu_count < 0 || gpu_count > 4096) return InvalidArgument("gpu_count must be 0..4096");
  return Ok();
}

Result<void> ListJobs::Validate() const {
  if (limit == 0 || limit > kMaxLimit) {
    return InvalidArgument("limit must be 1.." + std::to_string(kMaxLimit));
  }
  return Ok();
}

Result<void> RegisterJob::Validate() const {
  if (id == 0) return InvalidArgument("job id must be positive");
  if (start) {
    if (start->id != id) return InvalidArgument("start.id must be the registered job's id");
    if (start->req == 0) return InvalidArgument("start.req must name the start's own reply");
    if (Result<void> valid = start->Validate(); !valid) return valid.error().WithContext("start");
  }
  return Ok();
}

Result<void> StartJob::Validate() const {
  if (id == 0) return InvalidArgument("job id must be positive");
  if (placement.cpus.empty()) return InvalidArgument("a job needs at least one cpu");
  if (memory_max && *memory_max == 0) return InvalidArgument("memory_max must be positive");
  return placement.Validate();
}

}  // namespace hpcb::protocol

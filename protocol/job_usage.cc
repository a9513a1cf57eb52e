#include "protocol/job_usage.h"

#include <cmath>

namespace hpcb::protocol {

Result<void> JobUsage::Validate() const {
  for (double seconds : {wall_s, user_s, system_s}) {
    if (!std::isfinite(seconds) || seconds < 0) {
      return InvalidArgument("usage times must be finite and not negative");
    }
  }
  return Ok();
}

}  // namespace hpcb::protocol

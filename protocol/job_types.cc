#include "protocol/job_types.h"

#include <algorithm>

namespace hpcb::protocol {
namespace {
constexpr std::size_t kMaxPlacementIds = 1 << 16;
constexpr std::size_t kMaxGpuLinkName = 64;  // nvidia-smi's names are a few letters

Result<void> CheckIds(const std::vector<int>& ids, const char* what) {
  if (ids.size() > kMaxPlacementIds)
    return InvalidArgument(std::string(what) + " lists too many ids");
  for (int id : ids) {
    if (id < 0 || id >= (1 << 20))
      return InvalidArgument(std::string(what) + " holds an out-of-range id");
  }
  return Ok();
}
constexpr std::size_t kMaxGroups = 65536;
constexpr std::size_t kMaxUserName = 256;
}  // namespace

Result<void> UserIdentity::Validate() const {
  if (user.empty() || user.size() > kMaxUserName) {
    return InvalidArgument("user name is empty or too long");
  }
  if (groups.size() > kMaxGroups) return InvalidArgument("too many groups");
  return Ok();
}

Result<void> PlacementRecord::Validate() const {
  HPCB_TRY(CheckIds(cpus, "cpus"));
  HPCB_TRY(CheckIds(mems, "mems"));
  HPCB_TRY(CheckIds(gpus, "gpus"));
  // Bounded by the machine once cpus, mems and gpus are checked against it:
  // the run record that keeps this must stay small enough to be read back.
  for (const auto& [node, gib] : mem_by_node) {
    if (node != -1 && std::find(mems.begin(), mems.end(), node) == mems.end()) {
      return InvalidArgument("mem_by_node names a node that is not in mems");
    }
    if (!(gib >= 0 && gib <= 1e9)) return InvalidArgument("mem_by_node holds a bad amount");
  }
  if (gpu_link && gpu_link->size() > kMaxGpuLinkName)
    return InvalidArgument("gpu_link is too long");
  return Ok();
}

}  // namespace hpcb::protocol

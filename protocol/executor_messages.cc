#include "protocol/executor_messages.h"

#include <algorithm>

#include "protocol/user_requests.h"

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
}  // namespace

JobRequest JobRequest::From(const SubmitRequest& request, double submit_time) {
  JobRequest out;
  out.cpu = request.cpu;
  out.gpu_cores = request.gpu_cores;
  out.max_mem_gb = request.max_mem_gb;
  out.max_time_s = request.max_time_s;
  out.exclusive = request.exclusive;
  out.numa_local_mem = request.numa_local_mem;
  out.numa_local_gpu = request.numa_local_gpu;
  out.min_gpu_link = request.min_gpu_link;
  out.submit_time = submit_time;
  return out;
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

Result<void> ListJobsReply::Validate() const {
  if (jobs.size() > ListJobs::kMaxLimit) return InvalidArgument("a page holds too many jobs");
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

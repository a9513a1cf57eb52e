// The job's parts more than one channel carries: who a job runs as, what
// its submission asked for, and where the broker placed it. Kept apart from
// the channels' own messages so that neither channel's header includes
// the other's.
#ifndef HPCB_PROTOCOL_JOB_TYPES_H_
#define HPCB_PROTOCOL_JOB_TYPES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "protocol/codec.h"
#include "protocol/user_requests.h"

namespace hpcb::protocol {

// The identity a launcher child takes before doing anything for a user.
struct UserIdentity {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::string user;
  std::vector<std::uint32_t> groups;  // supplementary, from getgrouplist
  HPCB_FIELDS(uid, gid, user, groups)
  Result<void> Validate() const;
};

// What a submission asked for, as the executor read it from the client's
// own frame, kept in the launch spec. The root side's records are the one
// source of truth for what was accepted: from these the broker rebuilds a
// job it lost, with exactly the demand it accepted.
struct JobRequest : ResourceRequest {
  double submit_time = 0;  // epoch seconds
  template <class F>
  void Fields(F&& field) {
    ResourceRequest::Fields(field);
    HPCB_FIELD_LIST(submit_time);
  }
};

// The broker's placement of a job, as it booked it: the one shape a
// placement has on the wire and on disk (StartJob, SpawnRequest, the launch
// spec, the run record). Root acts on cpus, mems and gpus; the rest it only
// keeps, so that a broker which lost its books can book the job again.
struct PlacementRecord {
  std::vector<int> cpus;
  std::vector<int> mems;
  std::vector<int> gpus;
  std::map<int, double> mem_by_node;  // GiB per NUMA node; -1 machine-wide
  std::optional<std::string> gpu_link;
  bool spans_nodes = false;
  HPCB_FIELDS(cpus, mems, gpus, mem_by_node, gpu_link, spans_nodes)
  Result<void> Validate() const;
};

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_JOB_TYPES_H_

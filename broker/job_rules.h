// Pure rules over job records: list rows, `dispatch job` max-time changes,
// retention of finished jobs. No I/O.
#ifndef HPCB_BROKER_JOB_RULES_H_
#define HPCB_BROKER_JOB_RULES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "broker/job_record.h"
#include "common/base/result.h"
#include "protocol/client_messages.h"

namespace hpcb::broker {

// One `list` row; uptime counts to `now` while running, is final once done.
protocol::JobRow BuildRow(const JobRecord& job, double now);

// `dispatch job ID max-time ACTION [VALUE]` after the owner-or-admin
// lookup. `is_admin` gates set/add (checked before the finished check).
// Mutates `job` only on success.
Result<protocol::JobFieldReply> ApplyJobField(JobRecord& job,
                                              const protocol::JobFieldRequest& request,
                                              bool is_admin, const std::string& admin_group);

// Ids of done jobs to drop: per uid, everything but the newest `keep` by id
// (negative acts as 0). Queued and running jobs are never chosen, nor a
// job whose output could not be delivered (its buffer is kept), nor one
// a queued job still waits on (`--after`).
std::vector<std::uint64_t> RetentionVictims(const std::map<std::uint64_t, JobRecord>& jobs,
                                            std::int64_t keep);

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_JOB_RULES_H_

#include "broker/job_rules.h"

#include <algorithm>
#include <set>

#include "broker/dependencies.h"

namespace hpcb::broker {

protocol::JobRow BuildRow(const JobRecord& job, double now) {
  protocol::JobRow row;
  row.user = job.user;
  row.id = job.id;
  row.argv = job.argv;
  row.name = job.name;
  row.array_id = job.array_id;
  if (job.array_id) row.array_index = job.array_index;
  row.start_time = job.start_time;
  if (job.start_time) {
    if (job.running()) {
      row.uptime_s = now - *job.start_time;
    } else if (job.done()) {
      row.uptime_s = job.end_time.value_or(*job.start_time) - *job.start_time;
    }
    if (row.uptime_s && *row.uptime_s < 0) row.uptime_s = 0;
  }
  row.max_time_s = job.max_time_s;
  row.exclusive = job.demand.exclusive;
  row.max_mem_gb = job.max_mem_gb;
  row.mem_defaulted = job.mem_defaulted;
  int real_nodes = 0;
  for (const auto& [node, gib] : job.placement.mem_by_node) {
    if (node >= 0 && gib > 0) ++real_nodes;
  }
  row.mem_spans_nodes = job.placement.spans_nodes || real_nodes > 1;
  row.cpu = job.demand.cpu;
  row.gpus = job.queued() ? job.demand.gpus : static_cast<std::int64_t>(job.placement.gpus.size());
  row.gpu_link = job.placement.gpu_link;
  row.state = job.state;
  row.exit_code = job.exit_code;
  row.reason = job.reason;
  row.detail = job.detail;
  row.after = job.after;
  row.after_any = job.after_any;
  row.held = job.held && job.queued();
  row.output_dest = job.output_dest;
  row.output_error = job.output_error;
  row.error_dest = job.error_dest;
  row.usage = job.usage;
  return row;
}

Result<protocol::JobFieldReply> ApplyJobField(JobRecord& job,
                                              const protocol::JobFieldRequest& request,
                                              bool is_admin, const std::string& admin_group) {
  const std::string id = std::to_string(job.id);
  if (request.field != "max-time") {
    return InvalidArgument("unknown field '" + request.field + "'; try one of: max-time");
  }
  const std::string& action = request.action;
  if (action != "get" && action != "set" && action != "add") {
    return InvalidArgument("cannot '" + action + "' max-time; try one of: get, set, add");
  }
  if (action == "get") {
    return protocol::JobFieldReply{job.max_time_s, std::nullopt};
  }
  if (!is_admin) {
    return Error(
        ErrorCode::kPermissionDenied,
        "'job max-time " + action + "' requires membership of group '" + admin_group + "'");
  }
  if (job.done()) {
    return Error(ErrorCode::kFailedPrecondition, "job " + id + " already finished");
  }
  if (job.term_time) {
    return Error(ErrorCode::kFailedPrecondition, "job " + id + " is already being killed");
  }
  if (!request.value) {
    return InvalidArgument("max-time must be a whole number of seconds");
  }
  const std::int64_t value = *request.value;
  if (value < 1) {
    return InvalidArgument("max-time must be positive; use 'set' to shorten a job");
  }
  const std::int64_t before = job.max_time_s;
  std::int64_t after = value;
  if (action == "add") {
    constexpr std::int64_t kCeiling = std::int64_t{1} << 40;
    after = std::min(kCeiling, before + std::min(value, kCeiling));
  }
  job.max_time_s = after;
  return protocol::JobFieldReply{after, before};
}

std::vector<std::uint64_t> RetentionVictims(const std::map<std::uint64_t, JobRecord>& jobs,
                                            std::int64_t keep) {
  keep = std::max<std::int64_t>(0, keep);
  // No user can have more than `keep` finished jobs: nothing to scan for.
  if (jobs.size() <= static_cast<std::size_t>(keep)) return {};
  std::map<std::uint32_t, std::vector<std::uint64_t>> done_by_uid;
  const std::set<std::uint64_t> awaited = AwaitedJobs(jobs);
  for (const auto& [id, job] : jobs) {
    // Undelivered output is kept, job and all, until it is fetched: it
    // counts against its user's state limit instead of vanishing. A job
    // another still waits on is kept until that one has its answer.
    if (job.done() && !job.output_error && !awaited.contains(id)) {
      done_by_uid[job.uid].push_back(id);  // ascending ids
    }
  }
  std::vector<std::uint64_t> victims;
  for (auto& [uid, ids] : done_by_uid) {
    const std::size_t excess = ids.size() > static_cast<std::size_t>(keep)
                                   ? ids.size() - static_cast<std::size_t>(keep)
                                   : 0;
    victims.insert(victims.end(), ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(excess));
  }
  std::sort(victims.begin(), victims.end());
  return victims;
}

}  // namespace hpcb::broker

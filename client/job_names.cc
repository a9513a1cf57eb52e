#include "client/job_names.h"

#include <algorithm>
#include <string>

namespace hpcb::client {
namespace {

std::string IdList(const std::vector<std::uint64_t>& ids) {
  std::string text;
  for (std::uint64_t id : ids)
    text += (text.empty() ? "" : ", ") + std::to_string(id);
  return text;
}

}  // namespace

Result<std::vector<std::uint64_t>> JobsForName(const std::vector<protocol::JobRow>& rows,
                                               std::string_view name, NamedUse use) {
  const std::string quoted = "'" + std::string(name) + "'";
  std::vector<std::uint64_t> active;
  std::vector<std::uint64_t> finished;
  for (const protocol::JobRow& row : rows) {
    if (row.name != name) continue;
    (row.state == protocol::JobState::kDone ? finished : active).push_back(row.id);
  }
  std::sort(active.begin(), active.end());
  std::sort(finished.begin(), finished.end());
  if (active.empty() && finished.empty()) {
    return Error(ErrorCode::kNotFound, "no job of yours is named " + quoted);
  }
  if (use == NamedUse::kAttach && active.size() > 1) {
    return Error(ErrorCode::kFailedPrecondition, std::to_string(active.size()) +
                                                     " jobs of yours named " + quoted +
                                                     " are queued or running (" + IdList(active) +
                                                     "); attach follows one: name it by id");
  }
  if (!active.empty()) return active;
  if (use == NamedUse::kKill) {
    return Error(ErrorCode::kFailedPrecondition,
                 "every job of yours named " + quoted + " has finished (" + IdList(finished) + ")");
  }
  return std::vector<std::uint64_t>{finished.back()};
}

}  // namespace hpcb::client

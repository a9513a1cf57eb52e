#include "broker/output_retries.h"

#include <algorithm>

namespace hpcb::broker {

void OutputRetries::Failed(std::uint64_t id, const std::string& error, double now, double first_s) {
  if (error.find("over the delivery limit") != std::string::npos) {
    retries_.erase(id);
    return;
  }
  auto [it, added] = retries_.try_emplace(id, Retry{0, first_s, false});
  Retry& retry = it->second;
  if (retry.in_flight) return;
  if (!added) retry.wait_s = std::min(std::max(retry.wait_s, first_s) * 2, kLongestRetryS);
  retry.due = now + retry.wait_s;
}

void OutputRetries::AfterStart(std::uint64_t id, double now, double first_s) {
  retries_[id] = Retry{now + first_s, first_s, false};
}

void OutputRetries::Landed(std::uint64_t id) {
  if (auto it = retries_.find(id); it != retries_.end()) it->second.in_flight = false;
}

std::vector<std::uint64_t> OutputRetries::TakeDue(double now) {
  std::vector<std::uint64_t> due;
  for (auto& [id, retry] : retries_) {
    if (retry.in_flight || retry.due > now) continue;
    retry.in_flight = true;
    due.push_back(id);
  }
  return due;
}

}  // namespace hpcb::broker

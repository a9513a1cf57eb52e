#include "protocol/pending_calls.h"

#include <utility>
#include <vector>

namespace hpcb::protocol {

std::uint64_t PendingCalls::Add(std::chrono::milliseconds timeout, std::string what, Done done) {
  const std::uint64_t req = ++last_req_;
  calls_.emplace(
      req, Call{Clock::now() + timeout, timeout, std::move(what), std::move(done), std::nullopt});
  return req;
}

bool PendingCalls::Complete(std::uint64_t req, Result<Packet> reply) {
  auto it = calls_.find(req);
  if (it == calls_.end()) return false;
  Done done = std::move(it->second.done);
  calls_.erase(it);
  done(std::move(reply));
  return true;
}

void PendingCalls::FailLater(std::uint64_t req, Error error) {
  auto it = calls_.find(req);
  if (it == calls_.end()) return;
  it->second.failed = std::move(error);
  it->second.deadline = Clock::time_point::min();
}

void PendingCalls::ExpireOverdue(Clock::time_point now) {
  std::vector<Call> overdue;
  for (auto it = calls_.begin(); it != calls_.end();) {
    if (it->second.deadline <= now) {
      overdue.push_back(std::move(it->second));
      it = calls_.erase(it);
    } else {
      ++it;
    }
  }
  for (Call& call : overdue) {
    if (call.failed) {
      call.done(std::move(*call.failed));
      continue;
    }
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(call.timeout).count();
    call.done(Error(ErrorCode::kUnavailable,
                    call.what + " did not answer within " + std::to_string(seconds) + " s"));
  }
}

void PendingCalls::FailAll(const Error& error) {
  std::map<std::uint64_t, Call> all;
  all.swap(calls_);
  for (auto& [req, call] : all)
    call.done(error);
}

std::optional<PendingCalls::Clock::time_point> PendingCalls::NextDeadline() const {
  std::optional<Clock::time_point> earliest;
  for (const auto& [req, call] : calls_) {
    if (!earliest || call.deadline < *earliest) earliest = call.deadline;
  }
  return earliest;
}

}  // namespace hpcb::protocol

// PendingCalls: the requests one side of an internal channel has sent and
// not yet had answered, by req id (envelope.h). It is the only place a
// reply is matched to its request, for both the broker's calls to the
// executor and the executor's calls to the launcher.
//
// Each call has a deadline. A call whose reply does not come in time is
// completed with kUnavailable ("... did not answer within N s"), and its
// req is forgotten, so the reply, if it ever comes, finds no one waiting:
// Complete() returns false and the caller logs and drops it. What a caller
// does on that timeout is its own affair, but never "assume it worked".
//
// Callbacks may start new calls; each entry leaves the table before its
// callback runs.
#ifndef HPCB_PROTOCOL_PENDING_CALLS_H_
#define HPCB_PROTOCOL_PENDING_CALLS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "common/base/result.h"
#include "protocol/framing.h"

namespace hpcb::protocol {

class PendingCalls {
 public:
  using Clock = std::chrono::steady_clock;
  using Done = std::function<void(Result<Packet>)>;

  // Registers a call that must be answered within `timeout`; returns its
  // req. `what` names it in the timeout error ("the launcher's spawn").
  std::uint64_t Add(std::chrono::milliseconds timeout, std::string what, Done done);

  // The reply to `req` arrived: runs its callback with `reply` and returns
  // true; false when no call waits on `req` (late, or never asked).
  bool Complete(std::uint64_t req, Result<Packet> reply);

  // Makes `req` complete with `error` at the next ExpireOverdue (its
  // request could not even be sent): callers are never called back from
  // inside the call that started them.
  void FailLater(std::uint64_t req, Error error);

  // Drops `req` without running its callback: the reply it waited for will
  // not come (a start the executor never took up, say). A reply that does
  // come finds no one waiting.
  void Cancel(std::uint64_t req) { calls_.erase(req); }

  // Completes every call whose deadline is past `now` with a timeout error
  // (or the error FailLater gave it).
  void ExpireOverdue(Clock::time_point now = Clock::now());

  // Completes every call with `error` (the channel is gone).
  void FailAll(const Error& error);

  // The earliest deadline, if any call is outstanding.
  std::optional<Clock::time_point> NextDeadline() const;

 private:
  struct Call {
    Clock::time_point deadline;
    std::chrono::milliseconds timeout;
    std::string what;
    Done done;
    std::optional<Error> failed;
  };
  std::uint64_t last_req_ = 0;
  std::map<std::uint64_t, Call> calls_;
};

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_PENDING_CALLS_H_

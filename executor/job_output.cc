// A kept output delivered again, on the broker's request: the owner's
// `dispatch output ID [--to DIR]`, or the broker's retry after a back-off
// (broker/output_retries.h). Nothing is ever written
// to a path but by a helper that has become the job's owner, and a new path
// only ever comes from the owner's own frame on their own connection.
#include <fcntl.h>

#include "common/base/log.h"
#include "executor/executor_server.h"
#include "executor/sysfacts.h"
#include "protocol/queued_frame.h"
#include "protocol/user_requests.h"

namespace hpcb::executor {
namespace {

using protocol::Decode;
using protocol::Encode;
using protocol::WireError;

}  // namespace

void ExecutorServer::OnDeliverAgain(std::uint64_t req, const protocol::Packet& packet) {
  Result<protocol::DeliverAgain> request = Decode<protocol::DeliverAgain>(packet.bytes);
  if (!request) return Refuse(req, 0, "deliver_again", request.error());
  const std::uint64_t id = request->id;
  auto answer = [this, req, id](const std::optional<std::string>& dest,
                                std::optional<Error> error) {
    protocol::OutputReply reply{.req = req, .id = id, .output_dest = dest};
    if (error) reply.error = WireError::From(*error);
    SendToBroker(Encode(reply));
  };
  auto deliver_to = [this, id, answer](const std::string& dest) {
    Redeliver(id, dest, [this, id, answer, dest](std::optional<std::string> error) {
      if (error) return answer(std::nullopt, Error(ErrorCode::kFailedPrecondition, *error));
      // Where stdout is now: not `dest` when only stderr was kept.
      answer(jobs_.contains(id) ? jobs_.at(id).output_dest : dest, std::nullopt);
    });
  };
  if (Result<void> allowed = CheckPhase(JobOperation::kDeliverAgain, PhaseOf(id), id); !allowed) {
    LogWarning("refused deliver_again: " + allowed.error().message());
    return answer(std::nullopt, allowed.error());
  }
  const LaunchSpec& spec = jobs_.at(id);
  if (packet.fds.size() > 1) {
    return answer(std::nullopt, InvalidArgument("deliver_again takes at most the client socket"));
  }
  if (packet.fds.empty()) {
    if (!spec.output_dest) {
      return answer(std::nullopt, Error(ErrorCode::kFailedPrecondition,
                                        "the job ran with --no-output; nothing was kept"));
    }
    return deliver_to(*spec.output_dest);
  }
  // A new place: only from the job's owner, in their own words.
  Result<struct ucred> peer = CheckClientConnection(packet.fds[0].get(), config_.socket);
  if (!peer) return answer(std::nullopt, peer.error());
  if (peer->uid != spec.who.uid) {
    return answer(std::nullopt, Error(ErrorCode::kPermissionDenied,
                                      "only the job's owner may send its output somewhere new"));
  }
  Result<std::string> frame = protocol::TakeQueuedFrame(packet.fds[0].get());
  if (!frame) return answer(std::nullopt, frame.error().WithContext("reading the request"));
  Result<protocol::OutputRequest> asked = Decode<protocol::OutputRequest>(*frame);
  if (!asked || asked->id != id || !asked->to) {
    return answer(std::nullopt, InvalidArgument("the connection does not carry this request"));
  }
  // The state directory is the daemon's: a copy into it could land on the
  // job's own buffer, which is dropped once "delivered" (the helper also
  // refuses a destination that is the buffer itself, whatever the path).
  const std::string& to = *asked->to;
  if (to == config_.state_dir || to.starts_with(config_.state_dir + "/")) {
    return answer(std::nullopt, InvalidArgument("--to " + to +
                                                " is inside the daemon's state "
                                                "directory (" +
                                                config_.state_dir + "); name a path of your own"));
  }
  // The owner checked the place as themselves (dispatch); the delivery,
  // run as the owner, checks it again.
  deliver_to(protocol::ResolveDestination(to, asked->to_is_dir, id));
}

void ExecutorServer::Redeliver(std::uint64_t id, std::string dest,
                               std::function<void(std::optional<std::string>)> done) {
  if (Result<void> allowed = CheckPhase(JobOperation::kDeliverAgain, PhaseOf(id), id); !allowed) {
    return done(allowed.error().message());
  }
  auto it = jobs_.find(id);
  Result<UniqueFd> kept = OpenBuffer(it->second, O_RDONLY);
  // stdout delivered, stderr kept: that goes where --error said, and stdout
  // stays where it went.
  if (!kept) dest = it->second.output_dest.value_or(dest);
  if (!kept && it->second.error_dest) kept = OpenBuffer(it->second, O_RDONLY, "error");
  if (!kept) {
    return done(kept.error().code() == ErrorCode::kNotFound ? "no output is kept for this job"
                                                            : kept.error().message());
  }
  LaunchSpec target = it->second;
  target.output_dest = dest;
  in_flight_[id] = JobPhase::kFinishing;
  DeliverOutput(target, [this, id, dest = std::move(dest),
                         done = std::move(done)](const std::optional<std::string>& error) {
    in_flight_.erase(id);
    auto found = jobs_.find(id);
    if (found == jobs_.end()) return done(error);
    LaunchSpec& spec = found->second;
    if (error) {
      spec.output_error = error;
    } else {
      spec.output_dest = dest;
      spec.output_error.reset();
      LogInfo("job " + std::to_string(id) + ": output delivered to " + dest);
    }
    (void)Save(spec);
    WriteInfo(spec);
    done(error);
  });
}

}  // namespace hpcb::executor

#include "broker/executor_channel.h"

#include <poll.h>

#include <cerrno>
#include <utility>

#include "common/base/log.h"
#include "protocol/codec.h"
#include "protocol/framing.h"

namespace hpcb::broker {
namespace {

using protocol::ExecutorKind;

// The reply as the `Reply` the call expects. An Ack in its place is the
// executor refusing the request outright: its error is the result.
template <class Reply>
Result<Reply> DecodeReply(const Result<protocol::Packet>& packet) {
  if (!packet) return packet.error();
  HPCB_ASSIGN_OR_RETURN(protocol::Envelope envelope, protocol::PeekEnvelope(packet->bytes));
  HPCB_ASSIGN_OR_RETURN(ExecutorKind kind, protocol::KindOf<ExecutorKind>(envelope));
  if (kind == ExecutorKind::kAck && Reply::kKind != ExecutorKind::kAck) {
    HPCB_ASSIGN_OR_RETURN(protocol::Ack ack, protocol::Decode<protocol::Ack>(packet->bytes));
    if (ack.error) return ack.error->ToError();
    return Error(ErrorCode::kInternal, "the executor acknowledged a request that needs a reply");
  }
  if (kind != Reply::kKind) {
    return Error(ErrorCode::kInternal, "the executor sent '" + envelope.type + "' where '" +
                                           std::string(protocol::NameOf(Reply::kKind)) +
                                           "' was expected");
  }
  return protocol::Decode<Reply>(packet->bytes);
}

}  // namespace

template <class Request>
void SocketExecutorChannel::Call(Request request, const std::vector<int>& fds,
                                 const std::string& what, std::chrono::milliseconds timeout,
                                 protocol::PendingCalls::Done done) {
  request.req = calls_.Add(timeout, what, std::move(done));
  Result<void> sent = outbox_.Send(protocol::Encode(request), fds);
  if (!sent) calls_.FailLater(request.req, sent.error().WithContext("cannot reach the executor"));
}

template <class Reply, class Request>
Result<Reply> SocketExecutorChannel::CallAndWait(Request request, const std::string& what) {
  std::optional<Result<Reply>> outcome;
  Call(std::move(request), {}, what, kStartupTimeout,
       [&outcome](Result<protocol::Packet> packet) { outcome = DecodeReply<Reply>(packet); });
  while (!outcome) {
    calls_.ExpireOverdue();
    if (outcome) break;
    struct pollfd p {
      fd_.get(), static_cast<short>(POLLIN | (outbox_.wants_write() ? POLLOUT : 0)), 0
    };
    int ready = ::poll(&p, 1, 1000);
    if (ready < 0 && errno != EINTR) return Error::FromErrno(errno, "poll on the executor channel");
    if (ready > 0 && (p.revents & POLLOUT)) HPCB_TRY(SendQueued());
    if (ready > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) HPCB_TRY(Pump());
  }
  return std::move(*outcome);
}

Result<protocol::HelloReply> SocketExecutorChannel::Hello(std::int64_t gpu_count) {
  protocol::Hello hello;
  hello.gpu_count = gpu_count;
  return CallAndWait<protocol::HelloReply>(hello, "the executor's hello");
}

Result<protocol::ListJobsReply> SocketExecutorChannel::ListJobs(std::uint64_t after,
                                                                std::uint32_t limit) {
  protocol::ListJobs request;
  request.after = after;
  request.limit = limit;
  return CallAndWait<protocol::ListJobsReply>(request, "the executor's job list");
}

void SocketExecutorChannel::Register(protocol::RegisterJob job, int client_fd,
                                     Done<protocol::RegisterReply> done,
                                     Done<protocol::StartReply> started) {
  std::uint64_t start_req = 0;
  if (job.start) {
    // Its own call, so a late or lost start is matched and bounded like a
    // StartJob; it waits as long as the registration's answer plus a start.
    start_req =
        calls_.Add(2 * kCallTimeout, "the executor (starting job " + std::to_string(job.id) + ")",
                   [started = std::move(started)](const Result<protocol::Packet>& packet) {
                     started(DecodeReply<protocol::StartReply>(packet));
                   });
    job.start->req = start_req;
  }
  const std::uint64_t id = job.id;
  Call(std::move(job), {client_fd}, "the executor (registering job " + std::to_string(id) + ")",
       kCallTimeout,
       [this, start_req, done = std::move(done)](const Result<protocol::Packet>& packet) {
         Result<protocol::RegisterReply> reply = DecodeReply<protocol::RegisterReply>(packet);
         const bool start_follows = reply && !reply->error && reply->starting;
         if (start_req != 0 && !start_follows) calls_.Cancel(start_req);
         done(std::move(reply));
       });
}

void SocketExecutorChannel::Start(const protocol::StartJob& start,
                                  Done<protocol::StartReply> done) {
  Call(start, {}, "the executor (starting job " + std::to_string(start.id) + ")", kCallTimeout,
       [done = std::move(done)](const Result<protocol::Packet>& packet) {
         done(DecodeReply<protocol::StartReply>(packet));
       });
}

void SocketExecutorChannel::Signal(const protocol::SignalJob& signal, Done<protocol::Ack> done) {
  Call(signal, {}, "the executor (signalling job " + std::to_string(signal.id) + ")", kCallTimeout,
       [done = std::move(done)](const Result<protocol::Packet>& packet) {
         done(DecodeReply<protocol::Ack>(packet));
       });
}

void SocketExecutorChannel::Forget(std::uint64_t id, Done<protocol::Ack> done) {
  protocol::ForgetJob forget;
  forget.id = id;
  Call(forget, {}, "the executor (forgetting job " + std::to_string(id) + ")", kCallTimeout,
       [done = std::move(done)](const Result<protocol::Packet>& packet) {
         done(DecodeReply<protocol::Ack>(packet));
       });
}

void SocketExecutorChannel::OpenOutput(std::uint64_t id, Done<UniqueFd> done) {
  protocol::OpenOutput open;
  open.id = id;
  Call(open, {}, "the executor (opening the output of job " + std::to_string(id) + ")",
       kCallTimeout, [done = std::move(done)](Result<protocol::Packet> packet) {
         Result<protocol::Ack> ack = DecodeReply<protocol::Ack>(packet);
         if (!ack) return done(ack.error());
         if (ack->error) return done(ack->error->ToError());
         if (packet->fds.size() != 1) {
           return done(Error(ErrorCode::kInternal, "the executor sent no output descriptor"));
         }
         done(std::move(packet->fds[0]));
       });
}

void SocketExecutorChannel::DeliverAgain(std::uint64_t id, int client_fd,
                                         Done<protocol::OutputReply> done) {
  protocol::DeliverAgain request;
  request.id = id;
  std::vector<int> fds;
  if (client_fd >= 0) fds.push_back(client_fd);
  Call(request, fds, "the executor (delivering the output of job " + std::to_string(id) + ")",
       kCallTimeout, [done = std::move(done)](const Result<protocol::Packet>& packet) {
         done(DecodeReply<protocol::OutputReply>(packet));
       });
}

void SocketExecutorChannel::Query(std::uint64_t id,
                                  Done<std::optional<protocol::JobSummary>> done) {
  protocol::ListJobs request;
  request.after = id - 1;
  request.limit = 1;
  Call(request, {}, "the executor (asked about job " + std::to_string(id) + ")", kCallTimeout,
       [id, done = std::move(done)](const Result<protocol::Packet>& packet) {
         Result<protocol::ListJobsReply> page = DecodeReply<protocol::ListJobsReply>(packet);
         if (!page) return done(page.error());
         if (page->jobs.empty() || page->jobs[0].id != id) {
           return done(std::optional<protocol::JobSummary>());
         }
         done(std::optional<protocol::JobSummary>(page->jobs[0]));
       });
}

void SocketExecutorChannel::OnEvent(const protocol::Packet& packet) {
  Result<protocol::JobExited> event = protocol::Decode<protocol::JobExited>(packet.bytes);
  if (!event) {
    LogWarning("dropped a malformed event from the executor: " + event.error().message());
    return;
  }
  events_.push_back(std::move(*event));
}

Result<void> SocketExecutorChannel::Pump() {
  HPCB_ASSIGN_OR_RETURN(protocol::Packet packet, protocol::ReceiveMessage(fd_.get()));
  Result<protocol::Envelope> envelope = protocol::PeekEnvelope(packet.bytes);
  if (!envelope) {
    LogWarning("dropped a malformed message from the executor: " + envelope.error().message());
    return Ok();
  }
  if (envelope->req == 0) {
    if (envelope->type == protocol::NameOf(ExecutorKind::kExited)) {
      OnEvent(packet);
    } else {
      LogWarning("dropped an executor message of type '" + envelope->type + "' without a req");
    }
    return Ok();
  }
  const std::uint64_t req = envelope->req;
  if (!calls_.Complete(req, std::move(packet))) {
    LogWarning("dropped an executor reply to req " + std::to_string(req) +
               ", which no longer waits (it timed out)");
  }
  return Ok();
}

Result<void> SocketExecutorChannel::SendQueued() {
  return outbox_.Flush();
}

std::vector<protocol::JobExited> SocketExecutorChannel::TakeEvents() {
  std::vector<protocol::JobExited> out(std::make_move_iterator(events_.begin()),
                                       std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

}  // namespace hpcb::broker

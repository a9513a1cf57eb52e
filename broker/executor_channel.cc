#include "broker/executor_channel.h"

#include <poll.h>

#include <cerrno>

#include "protocol/codec.h"
#include "protocol/framing.h"

namespace hpcb::broker {
namespace {

constexpr int kReplyTimeoutMs = 60000;

template <class T>
Result<T> DecodeAs(const std::string& text) {
  return protocol::Decode<T>(text);
}

}  // namespace

Result<bool> SocketExecutorChannel::TakeIfEvent(const std::string& text) {
  HPCB_ASSIGN_OR_RETURN(std::string type, protocol::PeekTag(text, "type"));
  if (type != "exited") return false;
  HPCB_ASSIGN_OR_RETURN(protocol::JobExited event, DecodeAs<protocol::JobExited>(text));
  events_.push_back(std::move(event));
  return true;
}

Result<SocketExecutorChannel::Reply> SocketExecutorChannel::Call(const std::string& payload,
                                                                 const char* reply_type,
                                                                 const std::vector<int>& fds) {
  HPCB_TRY(protocol::SendMessage(fd_.get(), payload, fds));
  for (;;) {
    struct pollfd p {fd_.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, kReplyTimeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Error::FromErrno(errno, "poll on the executor channel");
    if (ready == 0) {
      return Error(ErrorCode::kUnavailable, "the executor did not answer within 60 s");
    }
    HPCB_ASSIGN_OR_RETURN(protocol::Packet packet, protocol::ReceiveMessage(fd_.get()));
    HPCB_ASSIGN_OR_RETURN(bool was_event, TakeIfEvent(packet.bytes));
    if (was_event) continue;
    HPCB_ASSIGN_OR_RETURN(std::string type, protocol::PeekTag(packet.bytes, "type"));
    if (type != reply_type) {
      return Error(ErrorCode::kInternal, "executor sent '" + type + "' where '" +
                                             reply_type + "' was expected");
    }
    return Reply{std::move(packet.bytes), std::move(packet.fds)};
  }
}

Result<protocol::HelloReply> SocketExecutorChannel::Hello() {
  HPCB_ASSIGN_OR_RETURN(Reply reply, Call(protocol::Encode(protocol::Hello{}), "hello_reply"));
  return DecodeAs<protocol::HelloReply>(reply.text);
}

Result<protocol::RegisterReply> SocketExecutorChannel::Register(const protocol::RegisterJob& job,
                                                                int client_fd) {
  HPCB_ASSIGN_OR_RETURN(Reply reply,
                        Call(protocol::Encode(job), "register_reply", {client_fd}));
  return DecodeAs<protocol::RegisterReply>(reply.text);
}

Result<protocol::StartReply> SocketExecutorChannel::Start(const protocol::StartJob& start) {
  HPCB_ASSIGN_OR_RETURN(Reply reply, Call(protocol::Encode(start), "start_reply"));
  return DecodeAs<protocol::StartReply>(reply.text);
}

Result<protocol::Ack> SocketExecutorChannel::Signal(const protocol::SignalJob& signal) {
  HPCB_ASSIGN_OR_RETURN(Reply reply, Call(protocol::Encode(signal), "ack"));
  return DecodeAs<protocol::Ack>(reply.text);
}

Result<protocol::Ack> SocketExecutorChannel::Forget(std::uint64_t id) {
  HPCB_ASSIGN_OR_RETURN(Reply reply, Call(protocol::Encode(protocol::ForgetJob{id}), "ack"));
  return DecodeAs<protocol::Ack>(reply.text);
}

Result<UniqueFd> SocketExecutorChannel::OpenOutput(std::uint64_t id) {
  HPCB_ASSIGN_OR_RETURN(Reply reply, Call(protocol::Encode(protocol::OpenOutput{id}), "ack"));
  HPCB_ASSIGN_OR_RETURN(protocol::Ack ack, DecodeAs<protocol::Ack>(reply.text));
  if (ack.error) return Error(ErrorCode::kFailedPrecondition, *ack.error);
  if (reply.fds.size() != 1) {
    return Error(ErrorCode::kInternal, "executor sent no output descriptor");
  }
  return std::move(reply.fds[0]);
}

Result<void> SocketExecutorChannel::Pump() {
  HPCB_ASSIGN_OR_RETURN(protocol::Packet packet, protocol::ReceiveMessage(fd_.get()));
  HPCB_ASSIGN_OR_RETURN(bool was_event, TakeIfEvent(packet.bytes));
  if (!was_event) {
    return Error(ErrorCode::kInternal, "executor sent an unsolicited reply");
  }
  return Ok();
}

std::vector<protocol::JobExited> SocketExecutorChannel::TakeEvents() {
  std::vector<protocol::JobExited> out(std::make_move_iterator(events_.begin()),
                                       std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

}  // namespace hpcb::broker

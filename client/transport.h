// The client side of the broker socket: one request per connection.
#ifndef HPCB_CLIENT_TRANSPORT_H_
#define HPCB_CLIENT_TRANSPORT_H_

#include <optional>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"

namespace hpcb::client {

// $HPC_BATCH_SOCKET, else protocol::kDefaultSocket.
std::string SocketPath();

// "cannot reach the hpc-batch daemon on PATH (STRERROR); is the service
// running?" on failure.
Result<UniqueFd> Connect(const std::string& path);

// Sends `request` and reads one reply frame; an ok:false reply becomes
// an Error carrying the daemon's message. Messages are the user-facing
// transport errors of the spec.
Result<std::string> Exchange(int fd, std::string_view request);
// The next reply frame on `fd`, as Exchange reads it (`sent`: whether the
// request went out, for its error).
Result<std::string> ReadReply(int fd, bool sent = true);
// A whole list, its pages read and joined (protocol::ListReply).
Result<protocol::ListReply> ListJobs(const std::string& path, const protocol::ListRequest& request);

// The next raw output frame of an attach stream: nullopt at the end (an
// empty frame or the daemon closing the connection).
Result<std::optional<std::string>> NextChunk(int fd);

template <class Reply>
Result<Reply> DecodeReply(std::string_view text) {
  Result<Reply> reply = protocol::Decode<Reply>(text);
  if (!reply) return Error(ErrorCode::kInvalidArgument, "malformed response from daemon");
  return reply;
}

// Connect + Exchange + DecodeReply.
template <class Reply, class Request>
Result<Reply> Call(const std::string& path, const Request& request, UniqueFd* keep = nullptr) {
  HPCB_ASSIGN_OR_RETURN(UniqueFd fd, Connect(path));
  HPCB_ASSIGN_OR_RETURN(std::string text, Exchange(fd.get(), protocol::Encode(request)));
  if (keep != nullptr) *keep = std::move(fd);
  return DecodeReply<Reply>(text);
}

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_TRANSPORT_H_

#include "client/transport.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "protocol/client_framing.h"
#include "protocol/framing.h"
#include "protocol/queued_frame.h"
#include "protocol/root_config.h"

namespace hpcb::client {
namespace {

Error Unreachable(const std::string& path, int errno_value) {
  return Error(ErrorCode::kUnavailable,
               "cannot reach the hpc-batch daemon on " + path + " (" + std::strerror(errno_value) +
                   "); is the service running?",
               errno_value);
}

Error ReadFailure(const Error& error) {
  if (error.code() == ErrorCode::kInvalidArgument) {
    return Error(ErrorCode::kInvalidArgument, "oversized response from daemon");
  }
  if (error.code() == ErrorCode::kUnavailable) {
    return Error(ErrorCode::kUnavailable, "daemon closed the connection unexpectedly");
  }
  return error;
}

}  // namespace

std::string SocketPath() {
  const char* env = std::getenv("HPC_BATCH_SOCKET");
  if (env != nullptr && *env != '\0') return env;
  return protocol::kDefaultSocket;
}

Result<UniqueFd> Connect(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return Unreachable(path, ENAMETOOLONG);
  std::memcpy(addr.sun_path, path.data(), path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Unreachable(path, errno);
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return Unreachable(path, errno);
  return fd;
}

Result<std::string> Exchange(int fd, std::string_view request) {
  if (request.size() > protocol::kMaxRequestFrame) {
    return InvalidArgument("the request is " + std::to_string(request.size()) +
                           " bytes (command, environment and paths); at most " +
                           std::to_string(protocol::kMaxRequestFrame) + " fit in one submission");
  }
  // A daemon that turns a connection away (too many open) says why and
  // closes before reading, so a failed send may still have a reply queued.
  const bool sent = static_cast<bool>(protocol::WriteFrame(fd, request));
  return ReadReply(fd, sent);
}

Result<std::string> ReadReply(int fd, bool sent) {
  auto frame = protocol::ReadFrame(fd, protocol::kMaxClientFrame);
  if (!sent && (!frame || !frame->has_value())) {
    return Error(ErrorCode::kUnavailable, "daemon closed the connection unexpectedly");
  }
  if (!frame) return ReadFailure(frame.error());
  if (!frame->has_value()) {
    return Error(ErrorCode::kUnavailable, "daemon closed the connection unexpectedly");
  }
  std::string text = std::move(**frame);
  Result<bool> ok = protocol::PeekOk(text);
  if (!ok) return Error(ErrorCode::kInvalidArgument, "malformed response from daemon");
  if (!*ok) {
    auto error = protocol::Decode<protocol::ErrorReply>(text);
    std::string message = (error && !error->error.empty()) ? error->error : "unknown daemon error";
    ErrorCode code = error ? static_cast<ErrorCode>(error->code) : ErrorCode::kInternal;
    return Error(code, message);
  }
  return text;
}

Result<protocol::ListReply> ListJobs(const std::string& path,
                                     const protocol::ListRequest& request) {
  HPCB_ASSIGN_OR_RETURN(UniqueFd fd, Connect(path));
  HPCB_ASSIGN_OR_RETURN(std::string text, Exchange(fd.get(), protocol::Encode(request)));
  HPCB_ASSIGN_OR_RETURN(protocol::ListReply reply, DecodeReply<protocol::ListReply>(text));
  while (reply.more) {
    HPCB_ASSIGN_OR_RETURN(std::string next, ReadReply(fd.get()));
    HPCB_ASSIGN_OR_RETURN(protocol::ListReply page, DecodeReply<protocol::ListReply>(next));
    for (protocol::JobRow& row : page.jobs)
      reply.jobs.push_back(std::move(row));
    reply.more = page.more;
  }
  return reply;
}

Result<std::optional<std::string>> NextChunk(int fd) {
  auto frame = protocol::ReadFrame(fd, protocol::kMaxClientFrame);
  if (!frame) return ReadFailure(frame.error());
  if (!frame->has_value() || (*frame)->empty()) return std::optional<std::string>();
  return std::move(*frame);
}

}  // namespace hpcb::client

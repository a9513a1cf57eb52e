#include "protocol/queued_frame.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>

#include "protocol/framing.h"

namespace hpcb::protocol {
namespace {

constexpr std::size_t kHeader = 4;

// recv without blocking; -1 with errno on failure (EINTR retried).
ssize_t RecvNow(int fd, char* into, std::size_t want, int flags) {
  for (;;) {
    ssize_t n = ::recv(fd, into, want, flags | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

}  // namespace

Result<std::optional<std::string>> PeekQueuedFrame(int fd, std::size_t cap) {
  char header[kHeader];
  ssize_t n = RecvNow(fd, header, kHeader, MSG_PEEK);
  if (n == 0) return Error(ErrorCode::kUnavailable, "client closed the connection");
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::optional<std::string>();
    return Error::FromErrno(errno, "recv");
  }
  if (static_cast<std::size_t>(n) < kHeader) return std::optional<std::string>();
  const std::size_t size = FrameLength(header);
  if (size > cap) return FrameTooLarge(size, cap);
  std::string frame(kHeader + size, '\0');
  n = RecvNow(fd, frame.data(), frame.size(), MSG_PEEK);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::optional<std::string>();
    return Error::FromErrno(errno, "recv");
  }
  if (static_cast<std::size_t>(n) < frame.size()) return std::optional<std::string>();
  return std::optional<std::string>(frame.substr(kHeader));
}

Result<std::string> TakeQueuedFrame(int fd, std::size_t cap) {
  char header[kHeader];
  ssize_t n = RecvNow(fd, header, kHeader, MSG_WAITALL);
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return Error::FromErrno(errno, "recv");
  if (n != static_cast<ssize_t>(kHeader)) {
    return Error(ErrorCode::kFailedPrecondition, "no whole request is waiting on the connection");
  }
  const std::size_t size = FrameLength(header);
  if (size > cap) return FrameTooLarge(size, cap);
  std::string body(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    n = RecvNow(fd, body.data() + got, size - got, 0);
    if (n <= 0) {
      return Error(ErrorCode::kFailedPrecondition, "the request on the connection is incomplete (" +
                                                       std::to_string(got) + " of " +
                                                       std::to_string(size) + " bytes)");
    }
    got += static_cast<std::size_t>(n);
  }
  return body;
}

void DiscardQueued(int fd, std::size_t limit) {
  char sink[16384];
  while (limit > 0) {
    ssize_t n = RecvNow(fd, sink, limit < sizeof sink ? limit : sizeof sink, 0);
    if (n <= 0) return;
    limit -= static_cast<std::size_t>(n);
  }
}

}  // namespace hpcb::protocol

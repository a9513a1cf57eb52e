#include "protocol/queued_frame.h"

#include <sys/socket.h>

#include <cerrno>

#include "protocol/framing.h"

namespace hpcb::protocol {
namespace {

constexpr std::size_t kHeader = 4;

}  // namespace

ssize_t RecvNow(int fd, char* into, std::size_t want, int flags) {
  for (;;) {
    ssize_t n = ::recv(fd, into, want, flags | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
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

}  // namespace hpcb::protocol

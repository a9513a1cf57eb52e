#include "protocol/client_framing.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace hpcb::protocol {
namespace {

constexpr std::size_t kHeader = 4;

// Reads exactly `want` bytes. Returns the count read before EOF (== want
// on success).
Result<std::size_t> ReadExact(int fd, char* out, std::size_t want) {
  std::size_t done = 0;
  while (done < want) {
    ssize_t got = ::read(fd, out + done, want - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Error::FromErrno(errno, "read frame");
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

}  // namespace

std::string EncodeFrame(std::string_view payload) {
  std::string out(kHeader, '\0');
  auto size = static_cast<std::uint32_t>(payload.size());
  for (std::size_t i = 0; i < kHeader; ++i)
    out[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  out.append(payload);
  return out;
}

Result<std::optional<std::string>> FrameDecoder::Next() {
  if (buffer_.size() < kHeader) return std::optional<std::string>();
  std::uint32_t size = FrameLength(buffer_.data());
  if (size > cap_) return FrameTooLarge(size, cap_);
  if (buffer_.size() < kHeader + static_cast<std::size_t>(size)) {
    return std::optional<std::string>();
  }
  std::string frame = buffer_.substr(kHeader, size);
  buffer_.erase(0, kHeader + static_cast<std::size_t>(size));
  return std::optional<std::string>(std::move(frame));
}

Result<void> WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t put = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    // A pipe or a file handed to the socket writer still works, slower.
    if (put < 0 && errno == ENOTSOCK) return WriteAllToFile(fd, bytes);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) return Error::FromErrno(errno, "write");
    bytes.remove_prefix(static_cast<std::size_t>(put));
  }
  return Ok();
}

Result<void> WriteFrame(int fd, std::string_view payload) {
  if (payload.size() > UINT32_MAX) return FrameTooLarge(payload.size(), UINT32_MAX);
  return WriteAll(fd, EncodeFrame(payload));
}

Result<std::optional<std::string>> ReadFrame(int fd, std::size_t cap) {
  char header[kHeader];
  HPCB_ASSIGN_OR_RETURN(std::size_t got, ReadExact(fd, header, kHeader));
  if (got == 0) return std::optional<std::string>();
  if (got < kHeader) return Error(ErrorCode::kUnavailable, "connection closed mid-frame");
  std::uint32_t size = FrameLength(header);
  if (size > cap) return FrameTooLarge(size, cap);
  std::string body(size, '\0');
  HPCB_ASSIGN_OR_RETURN(std::size_t body_got, ReadExact(fd, body.data(), size));
  if (body_got < size) return Error(ErrorCode::kUnavailable, "connection closed mid-frame");
  return std::optional<std::string>(std::move(body));
}

Result<void> SendMessage(int fd, std::string_view payload, const std::vector<int>& fds) {
  if (fds.size() > kMaxPassedFds) return InvalidArgument("too many descriptors to pass");
  bool first = true;
  for (const std::string& packet : SplitIntoPackets(payload)) {
    const int failed = SendPacket(fd, packet, first ? fds : std::vector<int>{}, 0);
    if (failed != 0) return Error::FromErrno(failed, "send message");
    first = false;
  }
  return Ok();
}

Result<struct ucred> PeerCredentials(int fd) {
  struct ucred cred = {};
  socklen_t size = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0) {
    return Error::FromErrno(errno, "read SO_PEERCRED");
  }
  return cred;
}

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

void DiscardQueued(int fd, std::size_t limit) {
  char sink[16384];
  while (limit > 0) {
    ssize_t n = RecvNow(fd, sink, limit < sizeof sink ? limit : sizeof sink, 0);
    if (n <= 0) return;
    limit -= static_cast<std::size_t>(n);
  }
}

}  // namespace hpcb::protocol

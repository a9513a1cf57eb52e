#include "protocol/framing.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace hpcb::protocol {
namespace {

constexpr std::size_t kPacketPayload = std::size_t{64} * 1024;
constexpr char kMore = '+';
constexpr char kLast = '.';

}  // namespace

std::uint32_t FrameLength(const char* bytes) {
  const auto* u = reinterpret_cast<const unsigned char*>(bytes);
  return static_cast<std::uint32_t>(u[0]) | (static_cast<std::uint32_t>(u[1]) << 8) |
         (static_cast<std::uint32_t>(u[2]) << 16) | (static_cast<std::uint32_t>(u[3]) << 24);
}

Error FrameTooLarge(std::size_t size, std::size_t cap) {
  return InvalidArgument("frame of " + std::to_string(size) + " bytes exceeds the " +
                         std::to_string(cap) + "-byte limit");
}

Result<void> WriteAllToFile(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t put = ::write(fd, bytes.data(), bytes.size());
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) return Error::FromErrno(errno, "write");
    if (put == 0) return Error(ErrorCode::kInternal, "write made no progress");
    bytes.remove_prefix(static_cast<std::size_t>(put));
  }
  return Ok();
}

Result<void> WriteAllAt(int fd, std::string_view bytes, std::uint64_t offset,
                        const std::string& what) {
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(errno, "write " + what);
    if (n == 0) return Error(ErrorCode::kUnavailable, "write " + what + ": nothing written");
    bytes.remove_prefix(static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
  return Ok();
}

Result<void> SyncDirectory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Error::FromErrno(errno, "open " + dir);
  if (::fsync(fd.get()) != 0) return Error::FromErrno(errno, "fsync " + dir);
  return Ok();
}

std::vector<std::string> SplitIntoPackets(std::string_view payload) {
  std::vector<std::string> packets;
  do {
    const std::size_t take = std::min(payload.size(), kPacketPayload);
    std::string packet(1, take == payload.size() ? kLast : kMore);
    packet.append(payload.substr(0, take));
    payload.remove_prefix(take);
    packets.push_back(std::move(packet));
  } while (!payload.empty());
  return packets;
}

int SendPacket(int fd, std::string_view packet, const std::vector<int>& fds, int flags) {
  struct iovec iov = {const_cast<char*>(packet.data()), packet.size()};
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
  if (!fds.empty()) {
    if (fds.size() > kMaxPassedFds) return E2BIG;
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    if (::sendmsg(fd, &msg, MSG_NOSIGNAL | flags) >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

Result<Packet> ReceiveMessage(int fd, std::size_t cap) {
  Packet message;
  // Left uninitialised on purpose: only the bytes the kernel writes are
  // read. Zero-filling 64 KiB writes 16 pages, and in the launcher, whose
  // running shepherds (forks that never exec) still share its pages, each
  // shared one is a copy-on-write fault on the way to a job's exec.
  auto buffer = std::make_unique_for_overwrite<char[]>(kPacketPayload + 1);
  bool overflow = false;
  bool bad_control = false;
  for (bool first = true;; first = false) {
    struct iovec iov = {buffer.get(), kPacketPayload + 1};
    struct msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t got;
    do {
      got = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    } while (got < 0 && errno == EINTR);
    if (got < 0) return Error::FromErrno(errno, "receive message");
    if (got == 0) return Error(ErrorCode::kUnavailable, "peer closed the connection");
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
          int passed;
          std::memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
          message.fds.emplace_back(passed);  // owned, so closed on any error
        }
        if (!first) bad_control = true;
      } else {
        bad_control = true;
      }
    }
    if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) bad_control = true;
    char flag = buffer[0];
    if (flag != kMore && flag != kLast) bad_control = true;
    std::size_t body = static_cast<std::size_t>(got) - 1;
    if (message.bytes.size() + body > cap) {
      overflow = true;
    } else {
      message.bytes.append(buffer.get() + 1, body);
    }
    if (flag != kMore) break;
  }
  if (overflow) return FrameTooLarge(message.bytes.size() + 1, cap);
  if (bad_control || message.fds.size() > kMaxPassedFds) {
    return InvalidArgument("malformed packet (bad flag, truncation or unexpected control data)");
  }
  return message;
}

}  // namespace hpcb::protocol

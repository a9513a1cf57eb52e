#include "protocol/outbox.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>

#include "protocol/framing.h"

namespace hpcb::protocol {

Result<void> Outbox::Enqueue(std::string bytes, const std::vector<int>& fds) {
  QueuedPacket packet{std::move(bytes), {}};
  for (int fd : fds) {
    UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!copy.valid()) return Error::FromErrno(errno, "keep a descriptor for a queued message");
    packet.fds.push_back(std::move(copy));
  }
  queued_bytes_ += packet.bytes.size();
  queue_.push_back(std::move(packet));
  return Ok();
}

Result<void> Outbox::Send(std::string_view payload, const std::vector<int>& fds) {
  if (fds.size() > kMaxPassedFds) return InvalidArgument("too many descriptors to pass");
  if (broken_) return Error(ErrorCode::kUnavailable, "the channel failed earlier");
  std::vector<std::string> packets = SplitIntoPackets(payload);
  for (std::size_t i = 0; i < packets.size(); ++i) {
    const std::vector<int>& attached = i == 0 ? fds : std::vector<int>{};
    if (queue_.empty()) {
      const int failed = SendPacket(fd_, packets[i], attached, MSG_DONTWAIT);
      if (failed == 0) continue;
      if (failed != EAGAIN && failed != EWOULDBLOCK) {
        // Half a message may be out: nothing sent after it could be read.
        broken_ = i > 0;
        return Error::FromErrno(failed, "send message");
      }
    }
    HPCB_TRY(Enqueue(std::move(packets[i]), attached));
  }
  return Ok();
}

Result<void> Outbox::Flush() {
  while (!queue_.empty()) {
    QueuedPacket& front = queue_.front();
    std::vector<int> fds;
    for (const UniqueFd& fd : front.fds)
      fds.push_back(fd.get());
    const int failed = SendPacket(fd_, front.bytes, fds, MSG_DONTWAIT);
    if (failed == EAGAIN || failed == EWOULDBLOCK) return Ok();
    if (failed != 0) {
      queue_.clear();
      queued_bytes_ = 0;
      broken_ = true;
      return Error::FromErrno(failed, "send message");
    }
    queued_bytes_ -= front.bytes.size();
    queue_.pop_front();
  }
  return Ok();
}

}  // namespace hpcb::protocol

// Outbox: the sending half of an internal channel (a SOCK_SEQPACKET
// socketpair), which never blocks.
//
// The trap it removes: two roles that each send a burst to the other with
// blocking sends both fill their peer's queue and then sit in sendmsg
// waiting for a reader that is itself sitting in sendmsg. Here a message
// the socket cannot take now waits in this queue, in order, and goes out
// from Flush() when poll reports the socket writable; the caller's loop
// keeps reading meanwhile. Each role's loop polls for POLLOUT while
// something is queued (wants_write()), and treats queued_bytes() over its
// high-water mark as back-pressure: it stops taking new work from whoever
// feeds it, never stops reading the peer this box sends to.
//
// A second trap: ReceiveMessage reads a message of several packets whole,
// waiting for the later ones. Two roles each waiting there for the rest of
// a message the other still holds queued would deadlock, so only one
// direction of a channel carries messages over one packet (64 KiB): the
// executor's list pages to the broker, and spawns (argv, env) to the
// launcher. Requests to the executor and the launcher's answers are small.
#ifndef HPCB_PROTOCOL_OUTBOX_H_
#define HPCB_PROTOCOL_OUTBOX_H_

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace hpcb::protocol {

class Outbox {
 public:
  // Past this many queued bytes a role stops taking new work that would
  // add to them (its clients are answered "busy").
  static constexpr std::size_t kHighWater = std::size_t{8} << 20;

  explicit Outbox(int fd = -1) : fd_(fd) {}  // borrowed

  // Sends `payload` (framed as SendMessage does) with `fds` on its first
  // packet, or queues what the socket will not take now. The descriptors
  // are borrowed: duplicated only if they have to wait. An error means the
  // peer is gone (or the message is malformed); nothing of it is queued.
  Result<void> Send(std::string_view payload, const std::vector<int>& fds = {});
  // Sends queued packets until the socket would block. An error means the
  // peer is gone; the queue is dropped, and later sends fail.
  Result<void> Flush();

  bool wants_write() const { return !queue_.empty(); }
  bool over_high_water() const { return queued_bytes_ > kHighWater; }
  std::size_t queued_bytes() const { return queued_bytes_; }

 private:
  struct QueuedPacket {
    std::string bytes;  // flag byte, then payload
    std::vector<UniqueFd> fds;
  };
  Result<void> Enqueue(std::string bytes, const std::vector<int>& fds);

  int fd_;
  std::deque<QueuedPacket> queue_;
  std::size_t queued_bytes_ = 0;
  // A send failed part-way (the peer is gone): every later one fails too.
  bool broken_ = false;
};

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_OUTBOX_H_

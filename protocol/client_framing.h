// The framing calls the root side never makes: the client stream the broker
// and `dispatch` speak (a little-endian u32 length, then that many bytes;
// the length is checked against the reader's cap before any of the body is
// read), peeking at a request still queued on a client's socket, and the
// blocking sends that start-up code and tests use. Kept out of framing.h so
// that the root binaries are not built from them (hpcb_client_protocol).
#ifndef HPCB_PROTOCOL_CLIENT_FRAMING_H_
#define HPCB_PROTOCOL_CLIENT_FRAMING_H_

#include <sys/socket.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "protocol/framing.h"
#include "protocol/queued_frame.h"

namespace hpcb::protocol {

// Replies from the broker, as `dispatch` reads them. A list of every job
// the daemon holds is about 400 bytes a row, so 200k queued jobs (a dozen
// users at their queue cap) are ~80 MiB in one frame; only the client reads
// it, so the cap is generous. Requests to the broker are capped far lower,
// by kMaxRequestFrame (queued_frame.h).
inline constexpr std::size_t kMaxClientFrame = std::size_t{1} << 30;

// Incremental decoder for length-prefixed stream frames (non-blocking use).
class FrameDecoder {
 public:
  explicit FrameDecoder(std::size_t cap) : cap_(cap) {}
  // Appends bytes read from the socket.
  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next whole frame, nullopt if incomplete, or kInvalidArgument once
  // a length prefix exceeds the cap (the stream is then unusable).
  Result<std::optional<std::string>> Next();
  std::size_t buffered() const { return buffer_.size(); }

 private:
  std::size_t cap_;
  std::string buffer_;
};

std::string EncodeFrame(std::string_view payload);

// Blocking: writes one frame (retries EINTR and short writes).
Result<void> WriteFrame(int fd, std::string_view payload);

// Blocking: reads one frame. nullopt on a clean EOF before the first byte;
// kUnavailable on EOF mid-frame; kInvalidArgument if the length exceeds cap.
Result<std::optional<std::string>> ReadFrame(int fd, std::size_t cap);

// Writes all of `bytes` to a socket, retrying EINTR and short writes;
// never raises SIGPIPE (a peer that went away is an error).
Result<void> WriteAll(int fd, std::string_view bytes);

// Sends one message on a SOCK_SEQPACKET socket (framing.h), split into
// packets as needed, with `fds` on the first. Blocking: only for start-up
// and tests; a serving loop uses an Outbox.
Result<void> SendMessage(int fd, std::string_view payload, const std::vector<int>& fds = {});

// The kernel-attested credentials of a connected unix socket's peer.
Result<struct ucred> PeerCredentials(int fd);

// The payload of the first frame queued on `fd`, left in the queue (the
// broker's look at a request it may hand on; queued_frame.h). nullopt
// while it has not fully arrived; kUnavailable once the client closed
// without one; kInvalidArgument when its length exceeds `cap`. Never
// blocks.
Result<std::optional<std::string>> PeekQueuedFrame(int fd, std::size_t cap = kMaxRequestFrame);

// Throws away up to `limit` queued bytes without blocking. Closing a unix
// socket with unread data makes the peer's next read fail with ECONNRESET,
// which would hide the reply we just wrote.
void DiscardQueued(int fd, std::size_t limit);

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_CLIENT_FRAMING_H_

// Framing for the two kinds of socket hpc-batch speaks over.
//
// Client <-> broker: SOCK_STREAM unix socket; each frame is a little-endian
// u32 length then that many bytes. The length is checked against the
// caller's cap before any byte of the body is read or buffered.
//
// Broker <-> executor <-> launcher: SOCK_SEQPACKET socketpairs, which keep
// message boundaries. A message larger than one packet (the kernel bounds a
// packet by the send buffer, ~208 KiB unprivileged) is split: every packet
// starts with one byte, '+' when more packets of the same message follow,
// '.' on the last. Passed descriptors (SCM_RIGHTS) ride on the first packet.
// The receiver stops reassembling at its cap, so a peer cannot make it
// buffer more than that.
#ifndef HPCB_PROTOCOL_FRAMING_H_
#define HPCB_PROTOCOL_FRAMING_H_

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/base/unique_fd.h"

namespace hpcb::protocol {

// Replies from the broker, as `dispatch` reads them. A list of every job
// the daemon holds is about 400 bytes a row, so 200k queued jobs (a dozen
// users at their queue cap) are ~80 MiB in one frame; only the client reads
// it, so the cap is generous. Requests to the broker are capped far lower,
// by kMaxRequestFrame (queued_frame.h).
inline constexpr std::size_t kMaxClientFrame = std::size_t{1} << 30;
inline constexpr std::size_t kMaxInternalMessage = std::size_t{1} << 20;
inline constexpr std::size_t kMaxPassedFds = 4;

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
// The length a 4-byte frame header announces, and the error for one over a cap.
std::uint32_t FrameLength(const char* bytes);
Error FrameTooLarge(std::size_t size, std::size_t cap);

// Blocking: writes one frame (retries EINTR and short writes).
Result<void> WriteFrame(int fd, std::string_view payload);

// Blocking: reads one frame. nullopt on a clean EOF before the first byte;
// kUnavailable on EOF mid-frame; kInvalidArgument if the length exceeds cap.
Result<std::optional<std::string>> ReadFrame(int fd, std::size_t cap);

struct Packet {
  std::string bytes;
  std::vector<UniqueFd> fds;
};

// The packets one message is split into: a flag byte, then at most 64 KiB.
std::vector<std::string> SplitIntoPackets(std::string_view payload);
// One packet with `fds` attached (SCM_RIGHTS), EINTR retried; 0 when sent,
// else the errno (EAGAIN under MSG_DONTWAIT when the socket is full).
int SendPacket(int fd, std::string_view packet, const std::vector<int>& fds, int flags);

// Sends one message, split into packets as needed, with `fds` on the first.
// Blocking: only for start-up and tests; a serving loop uses an Outbox.
Result<void> SendMessage(int fd, std::string_view payload, const std::vector<int>& fds = {});

// Receives one message. kUnavailable on EOF (peer gone); kInvalidArgument
// for a message over `cap`, a truncated packet or control data, or more
// than kMaxPassedFds descriptors (all of which are closed).
Result<Packet> ReceiveMessage(int fd, std::size_t cap = kMaxInternalMessage);

// The kernel-attested credentials of a connected unix socket's peer.
Result<struct ucred> PeerCredentials(int fd);

// Writes all of `bytes` to a socket, retrying EINTR and short writes;
// never raises SIGPIPE (a peer that went away is an error).
Result<void> WriteAll(int fd, std::string_view bytes);

// The same for a file or a pipe (send(2) would fail there with ENOTSOCK).
Result<void> WriteAllToFile(int fd, std::string_view bytes);

// All of `bytes` into a file at `offset` (pwrite), retrying EINTR and short
// writes; `what` names the file in the error.
Result<void> WriteAllAt(int fd, std::string_view bytes, std::uint64_t offset,
                        const std::string& what);

// fsync of the directory `dir`, which makes a rename into it durable.
Result<void> SyncDirectory(const std::string& dir);

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_FRAMING_H_

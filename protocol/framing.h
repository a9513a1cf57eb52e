// Framing for the two kinds of socket hpc-batch speaks over.
//
// Client <-> broker: SOCK_STREAM unix socket; each frame is a little-endian
// u32 length then that many bytes (client_framing.h; root only takes a
// queued request whole, queued_frame.h).
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

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace hpcb::protocol {

inline constexpr std::size_t kMaxInternalMessage = std::size_t{1} << 20;
inline constexpr std::size_t kMaxPassedFds = 4;

// The length a 4-byte frame header announces, and the error for one over a cap.
std::uint32_t FrameLength(const char* bytes);
Error FrameTooLarge(std::size_t size, std::size_t cap);

struct Packet {
  std::string bytes;
  std::vector<UniqueFd> fds;
};

// The packets one message is split into: a flag byte, then at most 64 KiB.
std::vector<std::string> SplitIntoPackets(std::string_view payload);
// One packet with `fds` attached (SCM_RIGHTS), EINTR retried; 0 when sent,
// else the errno (EAGAIN under MSG_DONTWAIT when the socket is full).
int SendPacket(int fd, std::string_view packet, const std::vector<int>& fds, int flags);

// Receives one message. kUnavailable on EOF (peer gone); kInvalidArgument
// for a message over `cap`, a truncated packet or control data, or more
// than kMaxPassedFds descriptors (all of which are closed).
Result<Packet> ReceiveMessage(int fd, std::size_t cap = kMaxInternalMessage);

// Writes all of `bytes` to a file or a pipe, retrying EINTR and short
// writes.
Result<void> WriteAllToFile(int fd, std::string_view bytes);

// All of `bytes` into a file at `offset` (pwrite), retrying EINTR and short
// writes; `what` names the file in the error.
Result<void> WriteAllAt(int fd, std::string_view bytes, std::uint64_t offset,
                        const std::string& what);

// fsync of the directory `dir`, which makes a rename into it durable.
Result<void> SyncDirectory(const std::string& dir);

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_FRAMING_H_

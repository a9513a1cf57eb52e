// A client's request frame read straight out of the socket's receive queue.
//
// The bargain behind "No path from the broker" (docs/design.md): what a
// job runs (argv, cwd, env, output) must reach the root executor from the
// user, not from the broker. So the
// broker only peeks at a submission (MSG_PEEK leaves it queued), decides
// whether to queue it, and passes the connection itself; the executor then
// takes the very same bytes from the socket. That only works if a whole
// request fits in the socket's queue at once: a unix stream socket holds
// about 200 KB with default buffers, hence kMaxRequestFrame, which the
// client checks before sending.
#ifndef HPCB_PROTOCOL_QUEUED_FRAME_H_
#define HPCB_PROTOCOL_QUEUED_FRAME_H_

#include <cstddef>
#include <optional>
#include <string>

#include "protocol/base/result.h"

namespace hpcb::protocol {

inline constexpr std::size_t kMaxRequestFrame = std::size_t{128} * 1024;

// The payload of the first frame queued on `fd`, left in the queue.
// nullopt while it has not fully arrived; kUnavailable once the client
// closed without one; kInvalidArgument when its length exceeds `cap`.
// Never blocks.
Result<std::optional<std::string>> PeekQueuedFrame(int fd, std::size_t cap = kMaxRequestFrame);

// Reads and returns the first frame, which must already be queued whole:
// never blocks, so a connection with nothing (or half a frame) on it is an
// error (kFailedPrecondition), not a wait.
Result<std::string> TakeQueuedFrame(int fd, std::size_t cap = kMaxRequestFrame);

// Throws away up to `limit` queued bytes without blocking. Closing a unix
// socket with unread data makes the peer's next read fail with ECONNRESET,
// which would hide the reply we just wrote.
void DiscardQueued(int fd, std::size_t limit);

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_QUEUED_FRAME_H_

// A client's request frame read straight out of the socket's receive queue.
//
// The bargain behind "No path from the broker" (docs/design.md): what a
// job runs (argv, cwd, env, output) must reach the root executor from the
// user, not from the broker. So the
// broker only peeks at a submission (MSG_PEEK leaves it queued;
// PeekQueuedFrame, client_framing.h), decides
// whether to queue it, and passes the connection itself; the executor then
// takes the very same bytes from the socket. That only works if a whole
// request fits in the socket's queue at once: a unix stream socket holds
// about 200 KB with default buffers, hence kMaxRequestFrame, which the
// client checks before sending.
#ifndef HPCB_PROTOCOL_QUEUED_FRAME_H_
#define HPCB_PROTOCOL_QUEUED_FRAME_H_

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "common/base/result.h"

namespace hpcb::protocol {

inline constexpr std::size_t kMaxRequestFrame = std::size_t{128} * 1024;

// recv without blocking; -1 with errno on failure (EINTR retried).
ssize_t RecvNow(int fd, char* into, std::size_t want, int flags);

// Reads and returns the first frame, which must already be queued whole:
// never blocks, so a connection with nothing (or half a frame) on it is an
// error (kFailedPrecondition), not a wait.
Result<std::string> TakeQueuedFrame(int fd, std::size_t cap = kMaxRequestFrame);

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_QUEUED_FRAME_H_

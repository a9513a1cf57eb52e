// What the launcher does as a user: the identity drop (fork-safe), and what
// a helper child runs after it: delivering a job's output, running a
// job's --notify command, emptying a forgotten job's directory. Root never opens a user-chosen path
// nor runs a user's command; these run only in a child that has become the user.
#ifndef HPCB_LAUNCHER_USER_OPS_H_
#define HPCB_LAUNCHER_USER_OPS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "common/base/result.h"
#include "protocol/launcher_messages.h"

namespace hpcb::launcher {

// Async-signal-safe: blocks every signal that can be blocked, then
// setgroups, setresgid, setresuid, each checked (and read back), then
// makes the process non-dumpable and checks that it is. Signals stay
// blocked: a job child unblocks them just before it execs, a helper never.
// Returns 0 or an errno. With `change` false does nothing.
int DropIdentity(bool change, uid_t uid, gid_t gid, const gid_t* groups, int ngroups);

// What a failed DropIdentity (its errno `err`) is told as.
Error SwitchUserError(const std::string& user, int err);

// The launcher refuses uid 0/gid 0 as root; in user mode only its own uid.
Result<void> CheckIdentityAllowed(const protocol::UserIdentity& who, bool as_root);

// In the current process (already the user): copies all of `buffer_fd`
// (from offset 0) to `dest`, whole or not at all. The bytes go to a fresh
// file (O_EXCL, never following a link) beside `dest`, which is fsynced and
// renamed over it: nothing is ever written into an existing file, and a
// copy cut short leaves no truncated file at `dest`. Refused, with `dest`
// untouched, when the buffer is over `max_bytes` or when `dest` exists and
// is not a regular file of ours with one link (a symlink, a FIFO, another
// user's file planted there).
Result<void> DeliverHere(int buffer_fd, const std::string& dest, std::uint64_t max_bytes);

// In the current process (already the user, a helper): runs `hook` as
// NotifyRequest says, waits for its shell at most `limit`, then kills the
// hook's process group, whatever of it is left. An error unless the shell
// exited 0 in time.
Result<void> NotifyHere(const protocol::NotifyRequest& hook, std::chrono::seconds limit);

// In the current process (already the user, a helper): removes everything
// below the directory `dir_fd`, which itself stays. Only through
// descriptors (openat with O_NOFOLLOW, unlinkat): a symlink goes as a
// link, and a name swapped meanwhile is never followed. A directory on
// another filesystem, or more than kMaxEmptyDepth levels down, stays with
// every directory above it; so does what the user may not remove. The
// error names the first thing that stayed.
inline constexpr int kMaxEmptyDepth = 128;
Result<void> EmptyDirHere(int dir_fd);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_USER_OPS_H_

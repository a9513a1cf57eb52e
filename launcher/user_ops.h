// The launcher's part in acting as a user: who it may become, and the
// identity drop itself (fork-safe), made by a job child before it execs the
// job and by a user helper before it execs hpc-batch-as-user
// (user_helper.h). Root never opens a user-chosen path nor runs a user's
// command: those happen only after the drop, in a program that holds
// nothing of root's.
#ifndef HPCB_LAUNCHER_USER_OPS_H_
#define HPCB_LAUNCHER_USER_OPS_H_

#include <sys/types.h>

#include <string>

#include "common/base/result.h"
#include "protocol/launcher_messages.h"

namespace hpcb::launcher {

// Async-signal-safe: blocks every signal that can be blocked, then
// setgroups, setresgid, setresuid, each checked (and read back), then
// makes the process non-dumpable and checks that it is. Signals stay
// blocked until the exec that follows: a job child unblocks them just
// before it, hpc-batch-as-user first thing after it.
// Returns 0 or an errno. With `change` false does nothing.
int DropIdentity(bool change, uid_t uid, gid_t gid, const gid_t* groups, int ngroups);

// What a failed DropIdentity (its errno `err`) is told as.
Error SwitchUserError(const std::string& user, int err);

// The launcher refuses uid 0/gid 0 as root; in user mode only its own uid.
Result<void> CheckIdentityAllowed(const protocol::UserIdentity& who, bool as_root);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_USER_OPS_H_

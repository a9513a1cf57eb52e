// What the launcher does as a user: identity drop (fork-safe), destination
// check and output delivery. Each runs in a forked child that has dropped
// to the user first; root never opens a user-chosen path.
#ifndef HPCB_LAUNCHER_USER_OPS_H_
#define HPCB_LAUNCHER_USER_OPS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/launcher_messages.h"

namespace hpcb::launcher {

// Async-signal-safe: setgroups, setresgid, setresuid, each checked (and
// read back). Returns 0 or an errno. With `change` false does nothing.
int DropIdentity(bool change, uid_t uid, gid_t gid, const gid_t* groups, int ngroups);

// The launcher refuses uid 0/gid 0 as root; in user mode only its own uid.
Result<void> CheckIdentityAllowed(const protocol::UserIdentity& who, bool as_root);

// Pure: existing directory -> DIR/output.<id>.log, else the exact path.
std::string ResolveDestination(const std::string& path, bool is_dir, std::uint64_t id);

// In the current process (already the user): resolve and check that the
// parent is a directory we can write and search. Returns the destination.
Result<std::string> CheckDestinationHere(const std::string& path, std::uint64_t id);

// In the current process (already the user): open dest O_WRONLY|O_CREAT|
// O_TRUNC|O_NOFOLLOW 0640 and copy all of `buffer_fd` from offset 0.
Result<void> DeliverHere(int buffer_fd, const std::string& dest);

// Forks, drops to `who` (when `change`), runs `body`, reports its error
// text through a pipe. Bounded: the child is killed after `timeout_s`.
Result<std::string> RunAsUser(const protocol::UserIdentity& who, bool change,
                              Result<std::string> (*body)(void*), void* arg,
                              int timeout_s = 60);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_USER_OPS_H_

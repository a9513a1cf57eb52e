// The account lookup a launcher child runs for the executor, and with it,
// when the registration names an output path, that path's check as the
// account: a submitter not seen lately then costs the launcher one fork,
// not a fork for the lookup and another for the check.
#ifndef HPCB_LAUNCHER_ACCOUNT_LOOKUP_H_
#define HPCB_LAUNCHER_ACCOUNT_LOOKUP_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>

#include "protocol/base/result.h"
#include "protocol/launcher_messages.h"

namespace hpcb::launcher {

// In a child of the launcher that is still root (a user helper started
// without an identity change): reads `uid`'s passwd entry and groups
// through NSS. With `output`, then closes every descriptor above
// `last_fd_kept` (what an NSS module left open, a directory service's
// socket say, is not for the user to hold), becomes the account, with
// `output->gid` as its gid, if `as_root` (DropIdentity: signals blocked,
// not dumpable), and checks the path as check_dest does, for job `id`.
// The identity rule is applied to that account first. A failed check is
// the reply's `output.error`; only a failed lookup is an error here.
// Returns the LookUpUserReply, without its req.
Result<protocol::LookUpUserReply> LookUpAccountHere(
    uid_t uid, const std::optional<protocol::OutputToCheck>& output, bool as_root, std::uint64_t id,
    int last_fd_kept);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_ACCOUNT_LOOKUP_H_

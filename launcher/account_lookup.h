// The account lookup a launcher child runs for the executor, and with it,
// when the registration names an output path, that path's check as the
// account: a submitter not seen lately then costs the launcher one fork,
// not a fork for the lookup and another for the check.
#ifndef HPCB_LAUNCHER_ACCOUNT_LOOKUP_H_
#define HPCB_LAUNCHER_ACCOUNT_LOOKUP_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/base/result.h"
#include "protocol/launcher_messages.h"

namespace hpcb::launcher {

// Where and as whom the output check after the lookup runs.
struct OutputCheckSetting {
  bool as_root = false;   // drop to the account; else keep our identity
  std::string proc_root;  // fs.suid_dumpable is read again here before the drop
  int last_fd_kept = 3;   // descriptors above it are closed before the drop
};

// In a child of the launcher that still has the launcher's identity (a
// user helper started without an identity change): reads `uid`'s passwd
// entry and groups through NSS. With `output`, it then checks that path
// as check_dest would, as the account found (with `output->gid` as its
// gid as root), for job `id`. The drop is DropIdentity's, after closing
// every descriptor above `last_fd_kept` (what an NSS module opened is not
// the user's to hold). A failed check is the reply's `output.error`; only
// a failed lookup is an error here. Where the check cannot be made safely
// here (NSS left a thread behind, so the signal mask would not cover the
// whole process; fs.suid_dumpable is now 1; descriptors cannot be
// closed), the reply has no `output` and the executor asks check_dest,
// which refuses or checks in a helper of its own. Returns the
// LookUpUserReply, without its req.
Result<protocol::LookUpUserReply> LookUpAccountHere(
    uid_t uid, const std::optional<protocol::OutputToCheck>& output, std::uint64_t id,
    const OutputCheckSetting& setting);

// True if the calling process has exactly one thread (read from
// /proc/self/status, its own, never under a test's proc root); false if
// it has more or that cannot be read.
bool SingleThreaded();

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_ACCOUNT_LOOKUP_H_

#include "launcher/account_lookup.h"

#include <unistd.h>

#include <cstring>
#include <vector>

#include "launcher/user_ops.h"
#include "protocol/host/accounts.h"

namespace hpcb::launcher {
namespace {

protocol::CheckedOutput CheckAs(const protocol::UserIdentity& account,
                                const protocol::OutputToCheck& output, bool as_root,
                                std::uint64_t id, int last_fd_kept) {
  protocol::CheckedOutput checked;
  protocol::UserIdentity who = account;
  if (as_root) who.gid = output.gid;
  if (Result<void> allowed = CheckIdentityAllowed(who, as_root); !allowed) {
    checked.error = protocol::WireError::From(allowed.error());
    return checked;
  }
  if (::close_range(static_cast<unsigned>(last_fd_kept) + 1, ~0U, 0) != 0) {
    checked.error =
        protocol::WireError::From(Error::FromErrno(errno, "closing what the lookup left open"));
    return checked;
  }
  std::vector<gid_t> groups(who.groups.begin(), who.groups.end());
  if (int err =
          DropIdentity(as_root, who.uid, who.gid, groups.data(), static_cast<int>(groups.size()));
      err != 0) {
    checked.error = protocol::WireError::From(
        Error(ErrorCode::kPermissionDenied,
              "cannot switch to user " + who.user + ": " + std::strerror(err)));
    return checked;
  }
  Result<std::string> dest = CheckDestinationHere(output.path, id);
  if (dest) {
    checked.dest = std::move(*dest);
  } else {
    checked.error = protocol::WireError::From(dest.error());
  }
  return checked;
}

}  // namespace

Result<protocol::LookUpUserReply> LookUpAccountHere(
    uid_t uid, const std::optional<protocol::OutputToCheck>& output, bool as_root, std::uint64_t id,
    int last_fd_kept) {
  HPCB_ASSIGN_OR_RETURN(host::UserRecord record, host::LookUpUser(uid));
  protocol::LookUpUserReply found;
  found.who = record.who;
  found.home = record.facts.home;
  found.shell = record.facts.shell;
  if (output) found.output = CheckAs(found.who, *output, as_root, id, last_fd_kept);
  return found;
}

}  // namespace hpcb::launcher

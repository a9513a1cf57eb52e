#include "launcher/account_lookup.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <string_view>
#include <vector>

#include "launcher/dumpable_check.h"
#include "launcher/user_ops.h"
#include "protocol/host/accounts.h"
#include "protocol/host/host_files.h"

namespace hpcb::launcher {
namespace {

// Whether the check may be made in this child (see LookUpAccountHere).
bool MayCheckHere(const OutputCheckSetting& setting) {
  if (!SingleThreaded()) return false;
  if (setting.as_root && !CheckSuidDumpable(setting.proc_root)) return false;
  return ::syscall(SYS_close_range, static_cast<unsigned>(setting.last_fd_kept) + 1, ~0U, 0U) == 0;
}

protocol::CheckedOutput CheckAs(const protocol::UserIdentity& account,
                                const protocol::OutputToCheck& output, std::uint64_t id,
                                bool as_root) {
  protocol::CheckedOutput checked;
  protocol::UserIdentity who = account;
  if (as_root) who.gid = output.gid;
  if (Result<void> allowed = CheckIdentityAllowed(who, as_root); !allowed) {
    checked.error = protocol::WireError::From(allowed.error());
    return checked;
  }
  std::vector<gid_t> groups(who.groups.begin(), who.groups.end());
  if (int err =
          DropIdentity(as_root, who.uid, who.gid, groups.data(), static_cast<int>(groups.size()));
      err != 0) {
    checked.error = protocol::WireError::From(SwitchUserError(who.user, err));
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

bool SingleThreaded() {
  Result<std::string> status = host::ReadSmallFile("/proc/self/status", std::size_t{64} << 10);
  if (!status) return false;
  constexpr std::string_view kThreads = "\nThreads:\t";
  const std::size_t at = status->find(kThreads);
  if (at == std::string::npos) return false;
  const std::size_t from = at + kThreads.size();
  return status->compare(from, 2, "1\n") == 0;
}

Result<protocol::LookUpUserReply> LookUpAccountHere(
    uid_t uid, const std::optional<protocol::OutputToCheck>& output, std::uint64_t id,
    const OutputCheckSetting& setting) {
  HPCB_ASSIGN_OR_RETURN(host::UserRecord record, host::LookUpUser(uid));
  protocol::LookUpUserReply found;
  found.who = record.who;
  found.home = record.facts.home;
  found.shell = record.facts.shell;
  if (output && MayCheckHere(setting))
    found.output = CheckAs(found.who, *output, id, setting.as_root);
  return found;
}

}  // namespace hpcb::launcher

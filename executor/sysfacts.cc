#include "executor/sysfacts.h"

#include <string>

namespace hpcb::executor {

Result<void> CheckSubset(const std::vector<int>& ids, const std::set<int>& allowed,
                         const char* what) {
  std::set<int> seen;
  for (int id : ids) {
    if (!allowed.count(id)) {
      return InvalidArgument(std::string(what) + " names " + std::to_string(id) +
                             ", which this machine does not have");
    }
    if (!seen.insert(id).second) {
      return InvalidArgument(std::string(what) + " lists " + std::to_string(id) + " twice");
    }
  }
  return Ok();
}

Result<void> CheckSubmitter(const struct ucred& peer, bool daemon_is_root,
                            std::uint32_t daemon_uid, std::optional<std::uint32_t> broker_uid) {
  if (daemon_is_root) {
    if (peer.uid == 0) return Error(ErrorCode::kPermissionDenied, "jobs never run as root (uid 0)");
    if (peer.gid == 0) return Error(ErrorCode::kPermissionDenied, "jobs never run with gid 0");
    if (broker_uid && peer.uid == *broker_uid) {
      return Error(ErrorCode::kPermissionDenied,
                   "jobs never run as the broker's service user (uid " + std::to_string(peer.uid) + ")");
    }
    return Ok();
  }
  if (peer.uid != daemon_uid) {
    return Error(ErrorCode::kPermissionDenied,
                 "in user mode only uid " + std::to_string(daemon_uid) + " may submit");
  }
  return Ok();
}

}  // namespace hpcb::executor

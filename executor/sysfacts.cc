#include "executor/sysfacts.h"

#include <sys/un.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

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

Result<void> CheckSubmitter(const struct ucred& peer, bool daemon_is_root, std::uint32_t daemon_uid,
                            std::optional<std::uint32_t> broker_uid) {
  if (daemon_is_root) {
    if (peer.uid == 0) return Error(ErrorCode::kPermissionDenied, "jobs never run as root (uid 0)");
    if (peer.gid == 0) return Error(ErrorCode::kPermissionDenied, "jobs never run with gid 0");
    if (broker_uid && peer.uid == *broker_uid) {
      return Error(
          ErrorCode::kPermissionDenied,
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

Result<struct ucred> CheckClientConnection(int fd, const std::string& socket_path) {
  int type = 0;
  socklen_t size = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) {
    return Error(ErrorCode::kPermissionDenied, "the forwarded descriptor is not a stream socket");
  }
  struct sockaddr_un local {};
  socklen_t length = sizeof local;
  if (::getsockname(fd, reinterpret_cast<struct sockaddr*>(&local), &length) != 0 ||
      local.sun_family != AF_UNIX) {
    return Error(ErrorCode::kPermissionDenied, "the forwarded socket is not a unix socket");
  }
  const std::size_t path_bytes = length > offsetof(struct sockaddr_un, sun_path)
                                     ? length - offsetof(struct sockaddr_un, sun_path)
                                     : 0;
  const std::string local_path(local.sun_path, ::strnlen(local.sun_path, path_bytes));
  if (local_path != socket_path) {
    return Error(ErrorCode::kPermissionDenied,
                 "the forwarded socket is not a connection accepted on " + socket_path);
  }
  struct ucred peer {};
  socklen_t cred_size = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &cred_size) != 0) {
    return Error::FromErrno(errno, "read SO_PEERCRED");
  }
  if (peer.uid == static_cast<uid_t>(-1) || peer.pid == 0) {
    return Error(ErrorCode::kPermissionDenied, "the forwarded socket has no peer");
  }
  return peer;
}

Result<std::vector<std::uint32_t>> PeerGroups(int fd) {
  std::vector<gid_t> groups(64);
  for (;;) {
    auto size = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &size) == 0) {
      groups.resize(size / sizeof(gid_t));
      return std::vector<std::uint32_t>(groups.begin(), groups.end());
    }
    // ERANGE: `size` now says how much the list needs (NGROUPS_MAX at most).
    if (errno != ERANGE || size / sizeof(gid_t) <= groups.size() || size > (1u << 20)) {
      return Error::FromErrno(errno, "read SO_PEERGROUPS");
    }
    groups.resize(size / sizeof(gid_t));
  }
}

}  // namespace hpcb::executor

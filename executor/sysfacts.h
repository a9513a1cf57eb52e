// The executor's checks of a broker request against facts it read itself:
// placement ids against the machine, a submitter against who may run jobs.
#ifndef HPCB_EXECUTOR_SYSFACTS_H_
#define HPCB_EXECUTOR_SYSFACTS_H_

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace hpcb::executor {

// Every id of `ids` is in `allowed`, no duplicates. `what` names the field.
Result<void> CheckSubset(const std::vector<int>& ids, const std::set<int>& allowed,
                         const char* what);

// Whose job may this be? As root: never uid 0 or gid 0, and never the
// broker's service user (`broker_uid`): a socket whose peer is the broker
// itself is one the broker made up, not a user's connection. In user mode:
// only the daemon's own uid.
Result<void> CheckSubmitter(const struct ucred& peer, bool daemon_is_root, std::uint32_t daemon_uid,
                            std::optional<std::uint32_t> broker_uid = std::nullopt);

// A socket the broker forwards as a client's connection must be one: a
// connected stream socket whose local address is the daemon's own socket
// `socket_path` (so it was accepted there, not connected by the broker to
// some user's service that would echo a submission back), with a real
// peer (not the uid -1 of an unconnected socket). Returns the peer's
// kernel-attested credentials.
Result<struct ucred> CheckClientConnection(int fd, const std::string& socket_path);

// The supplementary groups of the process that connected `fd`, as the
// kernel recorded them at connect (SO_PEERGROUPS): what a job runs with,
// never a list anyone could send.
Result<std::vector<std::uint32_t>> PeerGroups(int fd);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_SYSFACTS_H_

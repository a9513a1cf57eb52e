// Start-up of hpc-batchd (the launcher): refusals (exit 78, naming the
// opt-out flag), directories, the client socket, and the two child roles.
#ifndef HPCB_LAUNCHER_LAUNCHER_SETUP_H_
#define HPCB_LAUNCHER_LAUNCHER_SETUP_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "protocol/root_config.h"

namespace hpcb::launcher {

// Every check that ends in a refusal (the error text is the log line),
// then the state, socket and dev directories. As root it also looks up,
// once for every executor this launcher starts, the ids the executor is
// passed (it looks no name up itself) and sets them in `config`; a lookup
// that fails is a refusal. None in user mode.
Result<void> RunStartupChecks(protocol::RootConfig& config, bool as_root);

// Unlinks a stale socket, binds, chmod 0666, listens.
Result<UniqueFd> ListenClientSocket(const std::string& path);

struct Role {
  pid_t pid = -1;
  std::string name;
  int wait_status = -1;  // once reaped
};

// DIR_OF(/proc/self/exe)/binary: where the other programs are installed.
Result<std::string> BesideSelf(const std::string& binary);

// SIGTERM, then SIGKILL after `grace_ms`, waiting for that pid only.
void StopRole(Role& role, int grace_ms = 5000);

// Both roles and the launcher's end of the executor's channel.
struct RoleSet {
  Role executor;
  Role broker;
  UniqueFd executor_channel;
};

// Makes fresh channels and starts the executor and the broker (which gets
// the client socket `listener`, borrowed), each with its flags: the
// executor's are the daemon's plus the ids the launcher looked up for it.
Result<RoleSet> StartRoles(const std::vector<std::string>& executor_flags,
                           const std::vector<std::string>& broker_flags, int listener);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_LAUNCHER_SETUP_H_

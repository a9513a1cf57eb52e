// One daemon per state directory: the launcher holds an exclusive POSIX
// record lock (fcntl F_SETLK) on STATE/lock for its life. A second
// hpc-batchd on the same state would run queued jobs twice and take over
// the socket; it is refused before it touches anything (the socket, the
// roles, the records).
//
// Not flock: a flock belongs to the open file, which every child shares
// from its fork until it closes its copy, so a shepherd or helper forked
// just before a reload could still hold it when the re-exec'd launcher
// asks, and the daemon would refuse itself. A record lock is the
// process's own and no child has it.
//
// The trap: a reload re-execs the launcher, and the lock's fd is close-on-
// exec (a job or a role must never inherit it), so the lock is let go for
// the moment between the exec and the new image taking it again. A second
// daemon started in exactly that moment wins, and the reloaded one then
// exits 78 with the same message; the state is never shared.
#ifndef HPCB_LAUNCHER_STATE_LOCK_H_
#define HPCB_LAUNCHER_STATE_LOCK_H_

#include <string>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace hpcb::launcher {

// Takes STATE/lock (made 0600 if absent) and writes our pid into it; the
// lock lasts as long as the returned fd. kFailedPrecondition names the
// holder: "another hpc-batchd (pid N) holds STATE".
Result<UniqueFd> LockStateDir(const std::string& state_dir);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_STATE_LOCK_H_

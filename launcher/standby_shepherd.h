// A shepherd forked before it is needed. Forking the launcher costs most
// of a millisecond (page tables, a new process to schedule) on a slow
// virtual machine, and a job's start used to pay for it between the
// executor's spawn request and the job's exec. A standby pays for it while
// the launcher has nothing else to do: it closes everything it inherited
// but stdio and one socket, waits there for one job, then is that job's
// shepherd (launcher/job_shepherd.h) with the same socket as its report
// channel.
//
// The bargain: one more idle root process (a copy of the launcher, about a
// megabyte resident) while the daemon waits, for a fork off every start
// that finds it ready. It holds what the launcher held when it was forked,
// as every shepherd does, and becomes no user itself. It reads only what
// the launcher sends on a socketpair nobody else holds, after the launcher
// has made every check it makes for a shepherd it forks on demand; and it
// exits as soon as that socket closes, so a launcher that stops, dies or
// re-execs takes its standby with it.
#ifndef HPCB_LAUNCHER_STANDBY_SHEPHERD_H_
#define HPCB_LAUNCHER_STANDBY_SHEPHERD_H_

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "launcher/job_shepherd.h"
#include "protocol/base/result.h"
#include "protocol/base/unique_fd.h"

namespace hpcb::launcher {

struct StandbyShepherd {
  pid_t pid = -1;
  // The launcher's end, non-blocking: the job goes out, the report comes
  // back. A send that would wait fails instead, and the job gets a fork.
  UniqueFd channel;
};

// Forks a standby that will run its job with `options`.
Result<StandbyShepherd> StartStandbyShepherd(const ShepherdOptions& options);

// The largest order handed to a standby: one packet (protocol/framing.h),
// which an empty socket's send buffer always takes at once. A spawn with a
// larger environment gets a fresh fork instead.
inline constexpr std::size_t kMaxStandbyOrder = std::size_t{60} << 10;

// The order for `request_text` (the executor's spawn message as the
// launcher decoded and checked it) and `hide` (the GPU nodes to cover),
// or nullopt when it is larger than kMaxStandbyOrder.
std::optional<std::string> MakeStandbyOrder(const std::string& request_text,
                                            const std::vector<std::string>& hide);

// Gives `standby` its job. On success the standby is the job's shepherd
// and its channel carries the ShepherdReport. On failure (the standby has
// exited, or the send would wait) it is killed, not reaped: the caller
// reaps it and forks a shepherd the usual way.
Result<ShepherdChild> HandToStandby(StandbyShepherd standby, const std::string& order,
                                    const SpawnFds& fds);

// The order's bytes: the hidden nodes, each ended by a NUL, an empty
// entry, then the request.
std::string EncodeStandbyOrder(const std::string& request_text,
                               const std::vector<std::string>& hide);
struct StandbyOrder {
  std::string request_text;
  std::vector<std::string> hide;
};
Result<StandbyOrder> DecodeStandbyOrder(const std::string& bytes);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_STANDBY_SHEPHERD_H_

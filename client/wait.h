// `dispatch wait ID...` and the waiting half of `dispatch new --wait`:
// polls the daemon's job list (one request per poll, every kWaitPollS)
// until every job has ended, then turns how they ended into an exit code.
// Polling keeps the daemon free of long-lived waiters and survives a
// daemon restart in the middle: a failed poll is retried until the
// deadline, not fatal.
#ifndef HPCB_CLIENT_WAIT_H_
#define HPCB_CLIENT_WAIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/io.h"
#include "protocol/client_messages.h"

namespace hpcb::client {

// `--timeout` ran out with jobs still unfinished (as timeout(1) does).
inline constexpr int kExitTimeout = 124;
inline constexpr double kWaitPollS = 0.5;
// A daemon that cannot be reached for this long ends the wait (exit 1).
inline constexpr double kWaitUnreachableS = 60;

// The exit code for jobs that all ended: one job, its own exit code (1
// when it ended otherwise: killed, timeout, oom, error, dependency); more,
// 0 when every one exited 0, else 1.
int WaitExitCode(const std::vector<protocol::JobRow>& ended);

// "waiting for job 5 (running 1m03s), job 6 (queued)", for a terminal.
std::string ProgressLine(const std::vector<protocol::JobRow>& unfinished, double now);

// "job 5 finished: exit 0" / "job 6 finished: killed"; for a job that
// never started, "job 7 did not run: killed while queued" (or its detail).
std::string EndedLine(const protocol::JobRow& row);

struct WaitOptions {
  std::optional<double> timeout_s;
};

int RunWait(const std::string& socket, const std::vector<std::uint64_t>& ids,
            const WaitOptions& options, Io io);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_WAIT_H_

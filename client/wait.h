// `dispatch wait ID...` and the waiting half of `dispatch new --wait`:
// polls for the jobs' rows until every job has ended, then turns how they
// ended into an exit code. Both backends share the loop (WaitForJobs), so
// they print the same lines and exit the same way; the local one polls the
// daemon's job list (one request per poll, every kWaitPollS). Polling keeps
// the daemon free of long-lived waiters and survives a daemon restart in
// the middle: a poll that fails with kUnavailable after one that was
// answered (under Slurm, any) is retried until kWaitUnreachableS, not
// fatal.
#ifndef HPCB_CLIENT_WAIT_H_
#define HPCB_CLIENT_WAIT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
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

// One poll: the rows of `ids` as they stand now, finished ones included.
// An id missing from the answer ends the wait with "no such job N"; a poll
// may instead fail with its own kNotFound, worded its own way.
using JobPoll = std::function<Result<std::map<std::uint64_t, protocol::JobRow>>(
    const std::set<std::uint64_t>& ids)>;

// How WaitForJobs polls.
struct PollPace {
  double poll_s = kWaitPollS;  // between the first two polls
  // Each pause doubles up to this: a long wait costs the server little.
  // No more than poll_s: a steady pace.
  double max_s = 0;
  // Whether kUnavailable is ridden out before the first answer too. The
  // local daemon that never answered is not running; Slurm's controller
  // may be restarting just as the wait starts.
  bool patient_from_start = false;
};

// Polls at `pace` until every job in `ids` has ended (or options.timeout_s
// passes, checked after each poll: kExitTimeout). Says how each ended on
// stderr (EndedLine), as it ends; a terminal also gets a progress line. A
// poll's error is said through `report`.
int WaitForJobs(const std::vector<std::uint64_t>& ids, const WaitOptions& options,
                const PollPace& pace, const JobPoll& poll, Io io,
                int (*report)(const Error&, Io) = ReportError);

// WaitForJobs over the daemon at `socket`.
int RunWait(const std::string& socket, const std::vector<std::uint64_t>& ids,
            const WaitOptions& options, Io io);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_WAIT_H_

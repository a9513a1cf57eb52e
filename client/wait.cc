#include "client/wait.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <set>
#include <thread>

#include "client/array_rows.h"
#include "client/commands.h"
#include "client/format.h"
#include "client/transport.h"

namespace hpcb::client {
namespace {

bool Succeeded(const protocol::JobRow& row) {
  return row.state == protocol::JobState::kDone && !row.reason && row.exit_code == 0;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// One poll: the rows of `ids` the caller may see, finished ones included
// (only those: a user with thousands of jobs does not ship them all twice
// a second).
// Own jobs first; `--all` only when an id is not among them (an admin
// waiting for someone else's job), so ordinary users never need it.
Result<std::map<std::uint64_t, protocol::JobRow>> Poll(const std::string& socket,
                                                       const std::set<std::uint64_t>& ids) {
  std::map<std::uint64_t, protocol::JobRow> found;
  for (bool all : {false, true}) {
    // Past the most a list may name (a large array's elements), every job
    // is asked for and the rows picked here.
    std::vector<std::uint64_t> only;
    if (ids.size() <= protocol::kMaxListIds) only.assign(ids.begin(), ids.end());
    Result<protocol::ListReply> reply = ListJobs(socket, protocol::ListRequest{all, true, only});
    // Refused --all: the missing ids are not this user's to see.
    if (!reply && all) break;
    if (!reply) return reply.error();
    for (protocol::JobRow& row : reply->jobs) {
      if (ids.contains(row.id)) found[row.id] = std::move(row);
    }
    if (found.size() == ids.size()) break;
  }
  return found;
}

}  // namespace

int WaitExitCode(const std::vector<protocol::JobRow>& ended) {
  if (ended.size() == 1) {
    const protocol::JobRow& row = ended.front();
    if (Succeeded(row)) return 0;
    if (!row.reason && row.exit_code && *row.exit_code > 0 && *row.exit_code < 256) {
      return static_cast<int>(*row.exit_code);
    }
    return 1;
  }
  return std::all_of(ended.begin(), ended.end(), Succeeded) ? 0 : 1;
}

std::string ProgressLine(const std::vector<protocol::JobRow>& unfinished, double now) {
  std::string line = "waiting for";
  for (std::size_t i = 0; i < unfinished.size(); ++i) {
    const protocol::JobRow& row = unfinished[i];
    line += (i == 0 ? " job " : ", job ") + JobIdText(row);
    if (row.state == protocol::JobState::kRunning && row.start_time) {
      line += " (running " + FormatSeconds(std::max(0.0, now - *row.start_time)) + ")";
    } else {
      line += " (" + std::string(protocol::NameOf(row.state)) + ")";
    }
  }
  return line;
}

std::string EndedLine(const protocol::JobRow& row) {
  const std::string job = "job " + JobIdText(row);
  // A row without a start time but with an exit code ran (recovery can
  // learn of an exit before it learns of the start).
  if (!row.start_time && !row.exit_code) {
    // Killed while queued has no detail of its own.
    std::string why = row.detail                                   ? EscapeControl(*row.detail)
                      : row.reason == protocol::JobReason::kKilled ? "killed while queued"
                                                                   : ExitCell(row);
    return job + " did not run: " + why + "\n";
  }
  return job +
         " finished: " + (row.reason || !row.exit_code ? ExitCell(row) : "exit " + ExitCell(row)) +
         "\n";
}

namespace {

// The one progress line a terminal gets, rewritten in place; cleared
// before anything else is written to stderr.
class ProgressDisplay {
 public:
  explicit ProgressDisplay(Io io) : io_(io) {}
  void Show(const std::vector<protocol::JobRow>& unfinished) {
    if (!io_.err_is_tty || unfinished.empty()) return;
    io_.err << "\r\033[K" << ProgressLine(unfinished, static_cast<double>(std::time(nullptr)));
    io_.err.flush();
    shown_ = true;
  }
  void Clear() {
    if (shown_) io_.err << "\r\033[K";
    shown_ = false;
  }

 private:
  Io io_;
  bool shown_ = false;
};

}  // namespace

int WaitForJobs(const std::vector<std::uint64_t>& ids, const WaitOptions& options,
                const PollPace& pace, const JobPoll& poll, Io io, int (*report)(const Error&, Io)) {
  std::vector<std::uint64_t> unique;
  for (std::uint64_t id : ids) {
    if (std::find(unique.begin(), unique.end(), id) == unique.end()) unique.push_back(id);
  }
  std::set<std::uint64_t> pending(unique.begin(), unique.end());
  std::map<std::uint64_t, protocol::JobRow> ended;
  std::map<std::uint64_t, protocol::JobRow> last;  // each unfinished job's
  ProgressDisplay progress(io);
  const auto begin = std::chrono::steady_clock::now();
  bool answered = false;            // the daemon answered at least once
  double unreachable_since_s = -1;  // negative: the last poll was answered
  double interval = pace.poll_s;
  for (;;) {
    const double asked = Seconds(std::chrono::steady_clock::now() - begin);
    Result<std::map<std::uint64_t, protocol::JobRow>> rows = poll(pending);
    // Trap: a poll may take as long as its command's timeout; the deadline
    // is checked against the time after it.
    const double elapsed = Seconds(std::chrono::steady_clock::now() - begin);
    if (!rows) {
      // A daemon that answered before is restarting or reloading: keep
      // asking, boundedly. One that never answered is an error at once,
      // unless the pace says otherwise.
      if (unreachable_since_s < 0) unreachable_since_s = asked;
      if ((!answered && !pace.patient_from_start) ||
          rows.error().code() != ErrorCode::kUnavailable ||
          elapsed - unreachable_since_s >= kWaitUnreachableS) {
        progress.Clear();
        return report(rows.error(), io);
      }
    } else {
      answered = true;
      unreachable_since_s = -1;
      std::vector<protocol::JobRow> unfinished;
      for (std::uint64_t id : std::vector<std::uint64_t>(pending.begin(), pending.end())) {
        auto row = rows->find(id);
        if (row == rows->end()) {
          progress.Clear();
          return report(Error(ErrorCode::kNotFound, "no such job " + std::to_string(id)), io);
        }
        if (row->second.state != protocol::JobState::kDone) {
          unfinished.push_back(row->second);
          last[id] = row->second;
          continue;
        }
        progress.Clear();
        io.err << EndedLine(row->second);
        ended[id] = row->second;
        pending.erase(id);
      }
      if (pending.empty()) break;
      progress.Show(unfinished);
    }
    if (options.timeout_s && elapsed >= *options.timeout_s) {
      progress.Clear();
      // As the last poll named them: an element as ARRAY_INDEX.
      std::string left;
      for (std::uint64_t id : pending) {
        auto row = last.find(id);
        left += (left.empty() ? "" : ", ") +
                (row != last.end() ? JobIdText(row->second) : std::to_string(id));
      }
      io.err << "dispatch: --timeout reached; still unfinished: job " << left << "\n";
      return kExitTimeout;
    }
    double pause = interval;
    if (options.timeout_s) pause = std::min(pause, std::max(0.0, *options.timeout_s - elapsed));
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    interval = std::max(pace.poll_s, std::min(pace.max_s, interval * 2));
  }
  progress.Clear();
  io.err.flush();
  std::vector<protocol::JobRow> in_order;
  for (std::uint64_t id : unique)
    in_order.push_back(ended[id]);
  return WaitExitCode(in_order);
}

int RunWait(const std::string& socket, const std::vector<std::uint64_t>& ids,
            const WaitOptions& options, Io io) {
  return WaitForJobs(
      ids, options, PollPace{},
      [&socket](const std::set<std::uint64_t>& pending) { return Poll(socket, pending); }, io);
}

}  // namespace hpcb::client

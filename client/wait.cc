#include "client/wait.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <set>
#include <thread>

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

// One poll: the rows of `ids` the caller may see, finished ones included.
// Own jobs first; `--all` only when an id is not among them (an admin
// waiting for someone else's job), so ordinary users never need it.
Result<std::map<std::uint64_t, protocol::JobRow>> Poll(const std::string& socket,
                                                       const std::set<std::uint64_t>& ids) {
  std::map<std::uint64_t, protocol::JobRow> found;
  for (bool all : {false, true}) {
    Result<protocol::ListReply> reply =
        Call<protocol::ListReply>(socket, protocol::ListRequest{all, true});
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
    line += (i == 0 ? " job " : ", job ") + std::to_string(row.id);
    if (row.state == protocol::JobState::kRunning && row.start_time) {
      line += " (running " + FormatSeconds(std::max(0.0, now - *row.start_time)) + ")";
    } else {
      line += " (" + std::string(protocol::NameOf(row.state)) + ")";
    }
  }
  return line;
}

std::string EndedLine(const protocol::JobRow& row) {
  return "job " + std::to_string(row.id) + " finished: " +
         (row.reason || !row.exit_code ? ExitCell(row) : "exit " + ExitCell(row)) + "\n";
}

int RunWait(const std::string& socket, const std::vector<std::uint64_t>& ids,
            const WaitOptions& options, Io io) {
  const auto begin = std::chrono::steady_clock::now();
  std::set<std::uint64_t> pending(ids.begin(), ids.end());
  std::map<std::uint64_t, protocol::JobRow> ended;
  bool answered = false;
  bool unreachable = false;
  auto unreachable_since = begin;
  bool progress_shown = false;
  auto clear_progress = [&] {
    if (progress_shown) io.err << "\r\033[K";
    progress_shown = false;
  };
  bool first = true;
  while (!pending.empty()) {
    if (!first) std::this_thread::sleep_for(std::chrono::duration<double>(kWaitPollS));
    first = false;
    const auto now = std::chrono::steady_clock::now();
    if (options.timeout_s && Seconds(now - begin) >= *options.timeout_s) {
      clear_progress();
      std::string left;
      for (std::uint64_t id : pending) left += (left.empty() ? "" : ", ") + std::to_string(id);
      io.err << "dispatch: --timeout reached; still unfinished: job " << left << "\n";
      return kExitTimeout;
    }
    Result<std::map<std::uint64_t, protocol::JobRow>> rows = Poll(socket, pending);
    if (!rows && rows.error().code() == ErrorCode::kUnavailable && answered) {
      // It answered before, so it is restarting or reloading: keep asking,
      // boundedly. A daemon that never answered is an error at once.
      if (!unreachable) unreachable_since = now;
      unreachable = true;
      if (Seconds(now - unreachable_since) < kWaitUnreachableS) continue;
    }
    if (!rows) {
      clear_progress();
      return ReportError(rows.error(), io);
    }
    unreachable = false;
    answered = true;
    std::vector<protocol::JobRow> unfinished;
    for (auto it = pending.begin(); it != pending.end();) {
      auto row = rows->find(*it);
      if (row == rows->end()) {
        clear_progress();
        return ReportError(Error(ErrorCode::kNotFound,
                                 "no such job " + std::to_string(*it) +
                                     " (or not yours, or finished and no longer kept)"),
                           io);
      }
      if (row->second.state != protocol::JobState::kDone) {
        unfinished.push_back(row->second);
        ++it;
        continue;
      }
      if (options.announce) {
        clear_progress();
        io.err << EndedLine(row->second);
      }
      ended[*it] = row->second;
      it = pending.erase(it);
    }
    if (io.err_is_tty && !unfinished.empty()) {
      io.err << "\r\033[K"
             << ProgressLine(unfinished, static_cast<double>(std::time(nullptr)));
      progress_shown = true;
    }
    io.err.flush();
  }
  clear_progress();
  io.err.flush();
  std::vector<protocol::JobRow> rows;
  for (std::uint64_t id : ids) {
    if (ended.contains(id)) rows.push_back(ended[id]);
  }
  return WaitExitCode(rows);
}

}  // namespace hpcb::client

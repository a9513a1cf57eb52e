#include "broker/queue_journal.h"

#include <algorithm>
#include <optional>

#include "protocol/codec.h"

namespace hpcb::broker {
namespace {

// A parsed journal line. Both keys are always written, so the codec's
// "optional is an array of zero or one" needs no missing-key handling.
struct JournalEntry {
  std::uint64_t seq = 0;
  std::uint64_t next_id = 0;
  std::optional<JobRecord> job;
  std::optional<std::uint64_t> removed;

  template <class A>
  void load(A& ar) {
    protocol::Get(ar, "seq", seq);
    protocol::Get(ar, "next_id", next_id);
    protocol::Get(ar, "job", job);
    protocol::Get(ar, "removed", removed);
  }
  Result<void> Validate() const {
    if (seq == 0) return InvalidArgument("journal line has seq 0");
    if (job.has_value() == removed.has_value()) {
      return InvalidArgument("journal line must hold exactly one of job and removed");
    }
    if (job) return job->Validate();
    if (*removed == 0) return InvalidArgument("journal line removes id 0");
    return Ok();
  }
};

// True when `rest` holds nothing a writer could have meant: what a crash
// leaves after a cut-short append (nothing, or a zero-filled tail).
bool OnlyPadding(std::string_view rest) {
  return std::all_of(rest.begin(), rest.end(),
                     [](char c) { return c == '\n' || c == '\0' || c == ' '; });
}

}  // namespace

std::string JournalLine(std::uint64_t seq, std::uint64_t next_id, const QueueChange& change) {
  std::string line =
      "{\"seq\":" + std::to_string(seq) + ",\"next_id\":" + std::to_string(next_id) + ",\"job\":[";
  if (change.job != nullptr) line += protocol::Encode(*change.job);
  line += "],\"removed\":[";
  if (change.job == nullptr) line += std::to_string(change.id);
  line += "]}\n";
  return line;
}

JournalReplay ReplayJournal(std::string_view text, std::uint64_t after_seq,
                            std::map<std::uint64_t, JobRecord>& jobs) {
  JournalReplay replay;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    const std::string_view rest = end < text.size() ? text.substr(end + 1) : std::string_view();
    at = end + 1;
    if (OnlyPadding(line)) {
      if (OnlyPadding(rest)) break;
      replay.tail = JournalTail::kCorrupt;
      replay.problem = "blank or zero-filled line before the end";
      break;
    }
    Result<JournalEntry> entry = protocol::Decode<JournalEntry>(line);
    if (!entry) {
      replay.tail = OnlyPadding(rest) ? JournalTail::kTorn : JournalTail::kCorrupt;
      replay.problem = entry.error().message();
      break;
    }
    replay.last_seq = std::max(replay.last_seq, entry->seq);
    replay.next_id = std::max(replay.next_id, entry->next_id);
    if (entry->seq <= after_seq) continue;
    ++replay.applied;
    if (entry->job) {
      const std::uint64_t id = entry->job->id;
      replay.next_id = std::max(replay.next_id, id + 1);
      jobs.insert_or_assign(id, std::move(*entry->job));
    } else {
      replay.next_id = std::max(replay.next_id, *entry->removed + 1);
      jobs.erase(*entry->removed);
    }
  }
  return replay;
}

}  // namespace hpcb::broker

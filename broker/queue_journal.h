// The queue journal's format (STATE/broker/queue.journal): one JSON object
// per line, each the whole new record of one job or the removal of one id,
// appended after the snapshot (queue_store.h) so that a change costs one
// record, not the whole queue.
//
//   {"seq":S,"next_id":N,"job":[{...JobRecord...}],"removed":[]}
//   {"seq":S,"next_id":N,"job":[],"removed":[ID]}
//
// `seq` grows by one per line for the life of the state directory; the
// snapshot names the last seq it already contains, so replaying a journal
// that compaction did not get to reset (a crash between the two renames)
// skips those lines instead of undoing newer state. Every line carries
// next_id, so an id handed out is on disk with the first line that names it.
#ifndef HPCB_BROKER_QUEUE_JOURNAL_H_
#define HPCB_BROKER_QUEUE_JOURNAL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "broker/job_record.h"

namespace hpcb::broker {

// One change to journal: the job's current record, or, when `job` is null,
// the removal of `id`. `job` is borrowed for the call that takes it.
struct QueueChange {
  std::uint64_t id = 0;
  const JobRecord* job = nullptr;
};

// The line (with its '\n') that records `change`.
std::string JournalLine(std::uint64_t seq, std::uint64_t next_id, const QueueChange& change);

enum class JournalTail {
  kClean,    // every line parsed
  kTorn,     // the last line did not parse: a write cut short; ignored
  kCorrupt,  // a line before the last did not parse; it and the rest ignored
};

struct JournalReplay {
  std::uint64_t last_seq = 0;  // highest seq seen in the good lines
  std::uint64_t next_id = 0;   // highest next_id in the good lines
  std::size_t applied = 0;     // lines applied (seq above the snapshot's)
  JournalTail tail = JournalTail::kClean;
  std::string problem;  // why the bad line did not parse
};

// Applies, in order, the lines of `text` whose seq is above `after_seq` to
// `jobs`; lines at or below it are already in the snapshot and skipped.
// Removing an absent id is not an error (an id that failed registration is
// journalled as removed only to keep next_id).
JournalReplay ReplayJournal(std::string_view text, std::uint64_t after_seq,
                            std::map<std::uint64_t, JobRecord>& jobs);

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_QUEUE_JOURNAL_H_

// QueueStore: the broker's queue on disk, in STATE/broker (mode 0700, the
// service user's own), every file mode 0600 (job commands and paths are
// users' business). A forwarded environment is never here: the broker
// keeps none of it (only the root side's launch spec does, until start).
//
//   queue.json     the snapshot: {"next_id","jobs","journal_seq"}, written
//                  atomically (temp file, fsync, rename, fsync of the dir)
//   queue.journal  changes since the snapshot, one line each
//                  (queue_journal.h), fdatasync()ed by the Appends that
//                  ask for it
//
// The bargain: a change costs one appended record (plus one fdatasync when
// only the broker holds it; see BrokerCore::MarkChanged) instead of
// rewriting every job (10k finished ones made each submit
// O(queue)); in exchange Load replays the journal, and a record that was
// rewritten stays in the journal until the next compaction, which comes once the journal outgrows a
// few snapshots, so the work a compaction does is paid for by the appends before it.
#ifndef HPCB_BROKER_QUEUE_STORE_H_
#define HPCB_BROKER_QUEUE_STORE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "broker/job_record.h"
#include "broker/queue_journal.h"
#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace hpcb::broker {

// The highest "id"/"next_id" number in `text`, so that a corrupt file
// still never lets an id be reused. 0 when there is none.
std::uint64_t HighestIdMentioned(std::string_view text);

class QueueStore {
 public:
  // Compact once the journal is larger than this many snapshots (and at
  // least kMinJournalBytes, so a small queue is not rewritten constantly).
  static constexpr std::size_t kJournalFactor = 4;
  static constexpr std::size_t kMinJournalBytes = std::size_t{1} << 20;

  explicit QueueStore(std::string dir) : dir_(std::move(dir)) {}
  // Virtual only so tests can make the disk fail under the broker core.
  virtual ~QueueStore() = default;
  QueueStore(const QueueStore&) = delete;
  QueueStore& operator=(const QueueStore&) = delete;

  std::string path() const { return dir_ + "/queue.json"; }
  std::string journal_path() const { return dir_ + "/queue.journal"; }

  // The snapshot (a queue.json from before the journal existed loads as a
  // snapshot with journal_seq 0) with the journal replayed on top. Missing
  // files: empty queue. A corrupt snapshot: logged at ERROR, it and the
  // journal renamed to *.corrupt, empty queue. A torn last journal line:
  // logged at ERROR and ignored. A corrupt line before the last: logged at
  // ERROR, the journal renamed to queue.journal.corrupt, the lines before
  // it kept. In every case next_id is past every id either file mentions.
  // Only I/O failures other than ENOENT are errors. Afterwards
  // WantsCompaction() is true: the journal may end in a torn line, so
  // nothing is appended to it until Save() has replaced it.
  Result<QueueFile> Load();

  // Compaction: writes `file` as the new snapshot, then replaces the
  // journal with an empty one. `file` must hold every change appended so
  // far. A crash between the two leaves the old journal, whose lines the
  // new snapshot's journal_seq makes Load skip.
  virtual Result<void> Save(const QueueFile& file);

  // Appends one line per change; with `sync`, fdatasync()s the journal (so
  // these lines and every unsynced one before them are on disk when this
  // returns Ok). Without it the lines are in the file (a crash of the
  // process finds them) and reach the disk with the next sync or the
  // kernel's writeback. Refused while WantsCompaction(). On failure the
  // journal is closed (it may end in a partial line), so the caller's next
  // write must be a Save().
  virtual Result<void> Append(std::uint64_t next_id, const std::vector<QueueChange>& changes,
                              bool sync);

  // No journal is open (before the first Save, after a failed write) or it
  // has outgrown kJournalFactor snapshots.
  virtual bool WantsCompaction() const;

  std::size_t journal_bytes() const { return journal_bytes_; }

 private:
  Result<void> ResetJournal();

  std::string dir_;
  UniqueFd journal_;       // open for appending once Save() made it
  std::uint64_t seq_ = 0;  // the last seq written or loaded
  std::size_t snapshot_bytes_ = 0;
  std::size_t journal_bytes_ = 0;
};

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_QUEUE_STORE_H_

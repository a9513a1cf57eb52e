// The launch specs on disk: STATE/specs/<id>.json, one per job, and the
// journal (spec_journal.h) that makes saving them cheap.
//
// The bargain: a save writes one journal line at once (so a crash of the
// process finds it) and the loop turn's Commit makes every line of the
// turn durable with one fdatasync, before any answer of the turn goes out.
// Not every line needs that: a job's plain end is also in its run record,
// flushed there by the shepherd. Saved with Flush::kSoon, such a line rides
// on the next turn's flush that an acknowledgment needs, or is flushed once
// it is kSoonBound old, and its turn's answers do not wait: a job's end
// costs no flush of its own. Except a line that drops a forwarded
// environment: the secret must leave the disk with the turn, and only a
// durable line may stand in for the lines that hold it. And whatever takes
// a line as durable flushes first: a cut of the journal (journal.old, and
// its removal once its jobs have newer lines) and a clean stop.
// The spec files are checkpoints, written only when the journal holding
// their newest line is cut: past 4 MiB the journal is renamed journal.old
// and a new one begun; then, after each turn, a few of the specs whose
// newest line is only in journal.old are written to their files and
// fsynced; once all are, the directory is, and journal.old goes. A job
// saved three times between two cuts (registered, running, ended) costs
// one file, and one forgotten before the cut none: creating files, not
// writing them, is what a burst of jobs spends its time on. Start-up
// (Open) writes back every spec a journal holds newer than its file, and
// a clean stop (Checkpoint) writes them all; both flush the filesystem
// once (syncfs) and leave the journal empty. So spec files are current
// only after a cut, a start or a clean stop: the executor itself reads
// them only at start-up.
//
// The traps it avoids: a spec file renamed over a durable one before the
// new text is on disk can read back empty after a power cut, so a file is
// written only from a durable line, and fsynced before that line's journal
// goes. And a line keeps what its spec held: a job's forwarded
// environment, dropped from the spec once the job runs, would stay in the
// journal until it is cut. So once a line without it is durable, the
// earlier lines that held it are blanked in place (overwritten with
// newlines, which replay skips).
#ifndef HPCB_EXECUTOR_SPEC_STORE_H_
#define HPCB_EXECUTOR_SPEC_STORE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "executor/launch_spec.h"
#include "protocol/base/result.h"
#include "protocol/base/unique_fd.h"

namespace hpcb::executor {

class SpecStore {
 public:
  explicit SpecStore(std::string dir) : dir_(std::move(dir)) {}

  struct Opened {
    std::size_t restored = 0;              // spec files written back from a journal
    std::vector<std::uint64_t> forgotten;  // ids a journal forgot (their files removed)
    std::uint64_t highest_id = 0;          // the highest id any journal line names
    std::vector<std::string> problems;     // damaged or unreadable journals, for the log
  };
  // Start-up, before the spec files are read: every spec a journal holds a
  // newer version of is written back and every id it forgot is removed;
  // the filesystem is flushed; then the journals go and an empty one is
  // begun. A journal with damaged lines is used for its intact ones, then
  // kept as journal*.corrupt and reported; one that cannot be read is an
  // error (nothing is removed: a restart tries again).
  Result<Opened> Open();

  using Clock = std::chrono::steady_clock;
  // How soon a saved line must be on disk.
  enum class Flush {
    kBeforeAnswers,  // an answer of this turn relies on it
    kSoon,           // what it says is also kept elsewhere: within kSoonBound
  };
  static constexpr std::chrono::seconds kSoonBound{1};

  // Records `spec` as saved, its revision raised past every earlier one;
  // durable once a Commit flushes. Returns the bytes of its encoding.
  Result<std::uint64_t> Save(LaunchSpec& spec, Flush flush = Flush::kBeforeAnswers);
  // `id` is forgotten: its file goes now, and the journal says so.
  Result<void> Forget(std::uint64_t id);
  // The end of a turn: one fdatasync for every line written since the
  // last, if one of them is needed before answers or the oldest has
  // waited kSoonBound at `now`; answers wait for it. Then the lines a
  // durable newer one made needless and that held an environment are
  // blanked.
  Result<void> Commit(Clock::time_point now = Clock::now());
  // Lines written that no fdatasync has covered yet.
  bool lines_pending() const { return uncommitted_; }
  // After the turn's answers: the cut of the journal takes a step. An
  // error means a journal could not be rotated or the directory not
  // flushed: stop, a restart reads the disk.
  Result<void> Settle();
  // A clean stop (and tests): every spec in its file, on disk, the journal
  // left empty.
  Result<void> Checkpoint();
  // Start-up: the file of `id`, read as it is, holds a forwarded
  // environment (a queued job's), to be removed once the job has started.
  void FileHoldsEnvironment(std::uint64_t id) { env_in_file_.insert(id); }

  std::string journal_path() const { return dir_ + "/journal"; }
  std::string old_journal_path() const { return dir_ + "/journal.old"; }
  // For tests: when the journal is rotated, how many files a turn writes.
  // And how far it may grow while a cut waits.
  void set_limits(std::uint64_t rotate_bytes, std::size_t files_per_turn,
                  std::uint64_t max_bytes = 64u << 20) {
    rotate_bytes_ = rotate_bytes;
    files_per_turn_ = files_per_turn;
    max_bytes_ = max_bytes;
  }

 private:
  // Where a line that holds a forwarded environment is, to blank it.
  struct SecretLine {
    bool in_old = false;  // in journal.old, not the current journal
    std::uint64_t offset = 0;
    std::uint64_t length = 0;  // without its newline
  };
  struct Unwritten {
    std::string text;  // the newest encoding; its file is behind it
    bool has_env = false;
  };

  std::string SpecPath(std::uint64_t id) const;
  // Appends `line` at the journal's end; returns where it went.
  Result<std::uint64_t> Append(const std::string& line, Flush flush = Flush::kBeforeAnswers);
  // The line of `id`'s spec just appended at `offset`: remembered if it
  // holds an environment, else the older ones that did are to be blanked.
  void NoteSecret(std::uint64_t id, bool has_env, std::uint64_t offset, std::size_t line_size);
  void BlankSecrets();
  // Writes `id`'s newest encoding to its file (fsynced before its rename
  // when `sync`), keeping env_in_file_ true.
  Result<void> WriteSpecFile(std::uint64_t id, const Unwritten& spec, host::Sync sync);
  Result<void> EnsureJournal();
  Result<void> Preallocate(int fd) const;
  // Every spec whose file lags its line written (not flushed); then the
  // whole filesystem flushed, and an empty journal begun.
  Result<void> WriteAllAndStartAfresh(const std::function<void()>& before_fresh);
  // Both journals removed, an empty one begun, the directory flushed.
  Result<void> StartFreshJournal();
  // The fdatasync a Commit makes, if any line is pending, however young.
  Result<void> FlushJournal();

  std::string dir_;
  // Written with pwrite at journal_bytes_, not O_APPEND, so that lines can
  // be blanked in place; an append that failed part-way is overwritten by
  // the next, or left as a torn tail.
  UniqueFd journal_;
  UniqueFd old_journal_;  // journal.old, open while it is retired
  std::uint64_t journal_bytes_ = 0;
  bool uncommitted_ = false;            // lines written since the last flush
  bool needed_before_answers_ = false;  // one of them is Flush::kBeforeAnswers
  Clock::time_point pending_since_;     // when the first of them was written
  std::uint64_t revision_ = 0;
  std::map<std::uint64_t, Unwritten> unwritten_;
  // Ids whose file on disk holds a forwarded environment (a queued job's);
  // once a line without it is durable, the file goes (the line covers it).
  std::set<std::uint64_t> env_in_file_;
  std::set<std::uint64_t> to_unlink_;  // of those, after the next fdatasync
  bool stall_logged_ = false;          // a cut waiting on a file, said once
  bool preallocate_ = true;
  std::map<std::uint64_t, std::vector<SecretLine>> secret_lines_;
  std::set<std::uint64_t> to_blank_;  // ids whose secret lines go after the next fdatasync
  std::set<std::uint64_t> dirty_;     // newest line in journal, file not known durable
  std::set<std::uint64_t> retiring_;  // newest line in journal.old, file to write
  std::uint64_t rotate_bytes_ = 4u << 20;
  std::size_t files_per_turn_ = 32;
  // What a journal may grow to while a cut waits: well under what a start
  // reads back.
  std::uint64_t max_bytes_ = 64u << 20;
};

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_SPEC_STORE_H_

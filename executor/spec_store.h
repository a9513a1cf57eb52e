// The launch specs on disk: STATE/specs/<id>.json (0600), one per job.
//
// The bargain: a save writes its spec to a temp file, fsyncs it and
// renames it over the old one (host::Sync::kDeferred), so a power cut
// leaves the old spec or the new, never an empty file; the renames of a
// loop turn share one fsync of the directory, made by Commit before any
// answer of the turn goes out. A job's plain end (Flush::kSoon) does not
// ask for it: its run record holds the end, flushed by the shepherd, and a
// spec one version old only makes the end be read again from there.
// A queued job's forwarded environment leaves the state directory with
// the file that held it: the save that drops it replaces that file (the
// freed blocks are not overwritten; docs/security/open-issues.md).
#ifndef HPCB_EXECUTOR_SPEC_STORE_H_
#define HPCB_EXECUTOR_SPEC_STORE_H_

#include <cstdint>
#include <string>

#include "common/base/result.h"
#include "executor/launch_spec.h"

namespace hpcb::executor {

class SpecStore {
 public:
  explicit SpecStore(std::string dir) : dir_(std::move(dir)) {}

  // Start-up, before the spec files are read. An older release kept a
  // journal (specs/journal, journal.old) whose lines could be newer than
  // the files: an empty one is removed; one that holds lines is refused,
  // left as it is, with what to do about it.
  Result<void> Open();

  enum class Flush {
    kBeforeAnswers,  // an answer of this turn relies on it
    kSoon,           // what it says is also kept elsewhere (a plain end)
  };
  // Writes `spec` to its file; durable once a Commit has run. Returns the
  // bytes of its encoding.
  Result<std::uint64_t> Save(const LaunchSpec& spec, Flush flush = Flush::kBeforeAnswers);
  // `id` is forgotten: its file goes, durably with the next Commit.
  Result<void> Forget(std::uint64_t id);
  // The end of a turn: the directory fsynced if a rename or removal of the
  // turn needs it; answers wait for this.
  Result<void> Commit();
  bool commit_pending() const { return pending_; }

 private:
  std::string dir_;
  bool pending_ = false;
};

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_SPEC_STORE_H_

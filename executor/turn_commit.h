// Group commit for the executor: what one loop turn saved reaches the disk
// with one pass of fsyncs, and only then do the turn's answers go out.
//
// The bargain: a spec saved during the turn is written, fsynced and renamed
// into place at once (a crash of the process finds the new text), but the
// rename becomes durable only with an fsync of the specs directory, which
// is done once, at the end of the turn, for every spec the turn renamed.
// An answer that acknowledges a saved spec is held until then. A burst of
// submissions costs one directory commit per turn instead of one per job.
// The file's own fsync cannot wait when it replaces a durable spec: renamed
// unsynced over it, a power cut could leave it empty on XFS, or ext4 with
// noauto_da_alloc. A job's first spec replaces nothing, so its fsync waits
// for the turn's end too, and a job placed at once is spawned while its
// spec reaches the disk. A power cut first may leave that spec empty: the
// job was never acknowledged, and recovery drops it (job_recovery.cc).
//
// The trap it avoids: an answer sent before the flush could acknowledge a
// job that a power cut then loses. So every answer to the broker waits for
// the end of the turn (held answers are cheap: the turn ends within
// microseconds of the last message it read), and a failed flush sends
// nothing: the executor stops, and a restart reads what the disk holds.
#ifndef HPCB_EXECUTOR_TURN_COMMIT_H_
#define HPCB_EXECUTOR_TURN_COMMIT_H_

#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/base/unique_fd.h"

namespace hpcb::executor {

class TurnCommit {
 public:
  // `dir` is the directory every added file was renamed into.
  explicit TurnCommit(std::string dir) : dir_(std::move(dir)) {}

  // A file was renamed into `dir` this turn, its own contents already on
  // disk (host::Sync::kDeferred).
  void Renamed() { renamed_ = true; }

  // A file was renamed into `dir` this turn with its contents not yet on
  // disk (a job's first spec): fsynced by the flush, before the directory.
  void RenamedUnsynced(UniqueFd file);

  // An answer held until the turn's files are on disk; `fds` are duplicated
  // (the caller's close once it returns).
  Result<void> Hold(std::string text, const std::vector<int>& fds);

  // fsyncs the files left unsynced, then `dir` once if anything was renamed
  // into it this turn. On error nothing held may be sent.
  Result<void> Flush();

  struct Answer {
    std::string text;
    std::vector<UniqueFd> fds;
  };
  // The held answers, in the order they were held; empties the list.
  std::vector<Answer> TakeAnswers();

 private:
  std::string dir_;
  bool renamed_ = false;
  std::vector<UniqueFd> unsynced_;
  std::vector<Answer> answers_;
};

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_TURN_COMMIT_H_

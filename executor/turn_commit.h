// Group commit for the executor: what one loop turn saved reaches the disk
// with one pass of fsyncs, and only then do the turn's answers go out.
//
// The bargain: a spec saved during the turn is written and renamed into
// place at once (a crash of the process finds the new text; the page cache
// outlives it), but fsynced at the end of the turn, together with every
// other spec of that turn and one fsync of their directory. An answer that
// acknowledges a saved spec is held until then. A burst of submissions
// costs one journal commit per turn instead of two per job.
//
// The trap it avoids: an answer sent before the flush could acknowledge a
// job that a power cut then loses. So every answer to the broker waits for
// the end of the turn (held answers are cheap: the turn ends within
// microseconds of the last message it read), and a failed flush sends
// nothing: the executor stops, and a restart reads what the disk holds.
#ifndef HPCB_EXECUTOR_TURN_COMMIT_H_
#define HPCB_EXECUTOR_TURN_COMMIT_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/base/unique_fd.h"

namespace hpcb::executor {

class TurnCommit {
 public:
  // `dir` is the directory every added file was renamed into.
  explicit TurnCommit(std::string dir) : dir_(std::move(dir)) {}

  // A file written and renamed into `dir` this turn, still open. A turn
  // that saves more than kMaxOpen files flushes them early rather than hold
  // an fd each (a restart that finishes a thousand jobs in one turn must
  // not run out of fds); an error then also fails the turn's Flush.
  static constexpr std::size_t kMaxOpen = 128;
  Result<void> Add(UniqueFd file);

  // An answer held until the turn's files are on disk; `fds` are duplicated
  // (the caller's close once it returns).
  Result<void> Hold(std::string text, const std::vector<int>& fds);

  // fsyncs every added file, then `dir` once (the renames), and clears
  // them. On error nothing held may be sent.
  Result<void> Flush();

  struct Answer {
    std::string text;
    std::vector<UniqueFd> fds;
  };
  // The held answers, in the order they were held; empties the list.
  std::vector<Answer> TakeAnswers();

 private:
  std::string dir_;
  std::vector<UniqueFd> files_;
  std::vector<Answer> answers_;
  std::optional<Error> failed_;  // an early flush failed: so does the turn
};

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_TURN_COMMIT_H_

// The answers of one executor loop turn, held until what the turn saved is
// durable (SpecStore::Commit, one fsync of the specs directory), then sent
// to the broker in the order they were held.
//
// The trap it avoids: an answer sent before the commit could acknowledge a
// job that a power cut then loses. So every answer to the broker waits for
// the end of the turn (the turn ends within microseconds of the last
// message it read), and a failed commit sends nothing: the executor stops,
// and a restart reads what the disk holds.
#ifndef HPCB_EXECUTOR_TURN_COMMIT_H_
#define HPCB_EXECUTOR_TURN_COMMIT_H_

#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace hpcb::executor {

class TurnCommit {
 public:
  // An answer held until the turn's saves are durable; `fds` are
  // duplicated (the caller's close once it returns).
  Result<void> Hold(std::string text, const std::vector<int>& fds);

  struct Answer {
    std::string text;
    std::vector<UniqueFd> fds;
  };
  // The held answers, in the order they were held; empties the list.
  std::vector<Answer> TakeAnswers();

 private:
  std::vector<Answer> answers_;
};

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_TURN_COMMIT_H_

#include "executor/turn_commit.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "protocol/framing.h"

namespace hpcb::executor {

Result<void> TurnCommit::Hold(std::string text, const std::vector<int>& fds) {
  Answer answer{std::move(text), {}};
  for (int fd : fds) {
    UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!copy.valid()) return Error::FromErrno(errno, "dup a descriptor for the broker");
    answer.fds.push_back(std::move(copy));
  }
  answers_.push_back(std::move(answer));
  return Ok();
}

Result<void> TurnCommit::Flush() {
  if (!renamed_) return Ok();
  HPCB_TRY(protocol::SyncDirectory(dir_));
  renamed_ = false;  // only once it holds: a retried flush must sync again
  return Ok();
}

std::vector<TurnCommit::Answer> TurnCommit::TakeAnswers() {
  std::vector<Answer> answers;
  answers.swap(answers_);
  return answers;
}

}  // namespace hpcb::executor

#include "executor/turn_commit.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

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

std::vector<TurnCommit::Answer> TurnCommit::TakeAnswers() {
  std::vector<Answer> answers;
  answers.swap(answers_);
  return answers;
}

}  // namespace hpcb::executor

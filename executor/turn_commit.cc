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

void TurnCommit::RenamedUnsynced(UniqueFd file) {
  unsynced_.push_back(std::move(file));
  renamed_ = true;
}

Result<void> TurnCommit::Flush() {
  if (!renamed_) return Ok();
  // Each file before the directory: a name made durable must never point
  // at contents that are not.
  for (const UniqueFd& file : unsynced_) {
    if (::fsync(file.get()) != 0) return Error::FromErrno(errno, "fsync a new spec in " + dir_);
  }
  HPCB_TRY(protocol::SyncDirectory(dir_));
  // Only once it all holds: a retried flush must sync again.
  unsynced_.clear();
  renamed_ = false;
  return Ok();
}

std::vector<TurnCommit::Answer> TurnCommit::TakeAnswers() {
  std::vector<Answer> answers;
  answers.swap(answers_);
  return answers;
}

}  // namespace hpcb::executor

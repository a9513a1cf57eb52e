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

Result<void> TurnCommit::Add(UniqueFd file) {
  files_.push_back(std::move(file));
  if (files_.size() < kMaxOpen) return Ok();
  Result<void> flushed = Flush();
  if (!flushed) failed_ = flushed.error();
  return flushed;
}

Result<void> TurnCommit::Flush() {
  if (failed_) {
    Error error = *failed_;
    failed_.reset();
    files_.clear();
    return error;
  }
  if (files_.empty()) return Ok();
  std::vector<UniqueFd> files;
  files.swap(files_);
  for (const UniqueFd& file : files) {
    if (::fsync(file.get()) != 0) return Error::FromErrno(errno, "fsync a spec in " + dir_);
  }
  return protocol::SyncDirectory(dir_);
}

std::vector<TurnCommit::Answer> TurnCommit::TakeAnswers() {
  std::vector<Answer> answers;
  answers.swap(answers_);
  return answers;
}

}  // namespace hpcb::executor

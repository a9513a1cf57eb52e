#include "launcher/user_helper.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "launcher/child_fds.h"
#include "launcher/user_ops.h"
#include "protocol/framing.h"

namespace hpcb::launcher {
namespace {

// Answer format: 'O' then the body's text, or 'E', one byte of ErrorCode,
// then the message.
std::string EncodeAnswer(const Result<std::string>& result) {
  if (result) return "O" + *result;
  std::string text = "E";
  text += static_cast<char>(result.error().code());
  return text + result.error().message();
}

}  // namespace

Result<HelperChild> StartUserHelper(const protocol::UserIdentity& who, bool change,
                                    std::vector<int> keep, const HelperBody& body) {
  std::vector<gid_t> groups(who.groups.begin(), who.groups.end());
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno(errno, "fork");
  if (pid == 0) {
    // A single-threaded parent: allocating in this child is safe; it never
    // execs. The answer pipe goes first, the caller's descriptors after it.
    std::vector<int> fds{write_end.get()};
    fds.insert(fds.end(), keep.begin(), keep.end());
    if (!KeepOnlyFds(fds)) ::_exit(1);
    const int answer_fd = fds[0];
    if (answer_fd != kHelperAnswerFd) ::_exit(1);
    std::vector<int> kept(fds.begin() + 1, fds.end());
    const int err =
        DropIdentity(change, who.uid, who.gid, groups.data(), static_cast<int>(groups.size()));
    const Result<std::string> result = err == 0 ? body(kept) : SwitchUserError(who.user, err);
    (void)protocol::WriteAllToFile(answer_fd, EncodeAnswer(result));
    ::_exit(0);
  }
  return HelperChild{pid, std::move(read_end)};
}

Result<std::string> ParseHelperAnswer(const std::string& text) {
  if (!text.empty() && text[0] == 'O') return text.substr(1);
  if (text.size() >= 2 && text[0] == 'E') {
    auto code = static_cast<ErrorCode>(static_cast<unsigned char>(text[1]));
    if (code < ErrorCode::kInvalidArgument || code > ErrorCode::kInternal) {
      code = ErrorCode::kInternal;
    }
    return Error(code, text.substr(2));
  }
  return Error(ErrorCode::kInternal, "the user helper died without an answer");
}

}  // namespace hpcb::launcher

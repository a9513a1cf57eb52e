#include "launcher/user_helper.h"

#include <fcntl.h>
#include <unistd.h>

#include "launcher/child_fds.h"
#include "launcher/user_ops.h"
#include "protocol/framing.h"

namespace hpcb::launcher {

Result<HelperChild> StartUserHelper(const protocol::UserIdentity& who, bool change,
                                    std::vector<int> keep, const HelperProgram& program) {
  std::vector<gid_t> groups(who.groups.begin(), who.groups.end());
  // Built before the fork: the child only opens /dev/null, dups, drops and
  // execs.
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::vector<std::string> texts = program.argv;
  texts.insert(texts.end(), program.env.begin(), program.env.end());
  for (std::size_t i = 0; i < texts.size(); ++i)
    (i < program.argv.size() ? argv : envp).push_back(texts[i].data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno(errno, "fork");
  if (pid == 0) {
    // Its user may trace the program it execs, and so use whatever that
    // holds: /dev/null as its stdin, stdout and stderr (the launcher's are
    // the service's log, perhaps a terminal), then the answer pipe, the
    // request's descriptor, the program's (which closes on exec); and a
    // session of its own (no terminal of the launcher's is its own).
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    std::vector<int> fds{
        null, null, null, write_end.get(), keep.empty() ? -1 : keep[0], program.program_fd};
    if (keep.size() > 1 || !KeepOnlyFds(fds, 0) ||
        fds.back() != 4 + static_cast<int>(keep.size()) ||
        ::fcntl(fds.back(), F_SETFD, FD_CLOEXEC) != 0 || ::setsid() < 0) {
      ::_exit(1);
    }
    auto refuse = [](const Error& why) {
      std::string text = "E";
      text += static_cast<char>(why.code());
      (void)protocol::WriteAllToFile(3, text + why.message());
      ::_exit(1);
    };
    const int err =
        DropIdentity(change, who.uid, who.gid, groups.data(), static_cast<int>(groups.size()));
    if (err != 0) refuse(SwitchUserError(who.user, err));
    ::fexecve(fds.back(), argv.data(), envp.data());
    refuse(Error::FromErrno(errno, "cannot run hpc-batch-as-user"));
  }
  return HelperChild{pid, std::move(read_end)};
}

Result<void> ParseHelperAnswer(const std::string& text) {
  if (text == "O") return Ok();
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

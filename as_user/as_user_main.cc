// hpc-batch-as-user: one request of the launcher's, run as the user it has
// already become (user_side_ops.h). It answers on descriptor 3, once.
#include <signal.h>
#include <sys/prctl.h>

#include <string>
#include <vector>

#include "as_user/user_side_ops.h"
#include "protocol/framing.h"

extern char** environ;

int main(int argc, char** argv) {
  // Exec'd from a descriptor (fexecve), a kernel before 6.14 names the
  // process after the descriptor's number ("5" in ps and /proc/PID/comm);
  // the name an admin, and the hostile tests, look for is its own.
  (void)::prctl(PR_SET_NAME, "hpc-batch-as-user", 0, 0, 0);
  // The launcher's child blocked every signal before it dropped to the user
  // (its memory was a copy of root's until this exec); this program holds
  // nothing of root's, and the command it may run must start clean.
  for (int sig = 1; sig < NSIG; ++sig)
    (void)::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry)
    env.emplace_back(*entry);
  const hpcb::Result<void> result =
      hpcb::as_user::RunRequest(std::vector<std::string>(argv + 1, argv + argc), env);
  const std::string answer = hpcb::as_user::EncodeAnswer(result);
  if (!hpcb::protocol::WriteAllToFile(hpcb::as_user::kAnswerFd, answer)) return 2;
  return result ? 0 : 1;
}

// A user helper: a child of the launcher that drops to a user and execs
// hpc-batch-as-user (as_user/user_side_ops.h) to do one thing as them:
// deliver output, run a --notify command, empty a job directory. Between
// the fork and that exec the child's memory is a copy of root's, so it runs
// nothing of the request there; after it, nothing of root's is left. Its
// answer comes back through a pipe that the launcher's loop polls, so the
// launcher never waits on it; whoever started it owns its deadline.
#ifndef HPCB_LAUNCHER_USER_HELPER_H_
#define HPCB_LAUNCHER_USER_HELPER_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "protocol/launcher_messages.h"

namespace hpcb::launcher {

struct HelperChild {
  pid_t pid = -1;
  UniqueFd answer;  // read end; EOF once the helper is done or dead
};

// What the helper runs: hpc-batch-as-user (opened by the launcher at its
// start, so every helper runs the program it was installed with) and its
// command line and environment.
struct HelperProgram {
  int program_fd = -1;
  std::vector<std::string> argv;
  std::vector<std::string> env;
};

// Forks the helper: the answer pipe becomes its descriptor 3 and `keep`
// (at most one: the request's buffer or directory) its 4; every other
// descriptor is closed. `change` false (user mode) keeps our identity.
Result<HelperChild> StartUserHelper(const protocol::UserIdentity& who, bool change,
                                    std::vector<int> keep, const HelperProgram& program);

// What a helper wrote: ok, or the error it names; an empty or garbled
// answer (it was killed, or died, or could not exec) is an error saying so.
Result<void> ParseHelperAnswer(const std::string& text);

// Answers larger than this are cut (and then garbled): a helper's answer is
// an error line at most.
inline constexpr std::size_t kMaxHelperAnswer = std::size_t{64} * 1024;

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_USER_HELPER_H_

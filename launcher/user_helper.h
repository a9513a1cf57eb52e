// A user helper: a child of the launcher that has dropped to a user and
// does one thing as them (deliver output, run a --notify command, empty a
// job directory). Its answer comes back through a pipe that the launcher's
// loop polls, so the launcher never waits on it; whoever started it owns
// its deadline.
#ifndef HPCB_LAUNCHER_USER_HELPER_H_
#define HPCB_LAUNCHER_USER_HELPER_H_

#include <sys/types.h>

#include <functional>
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

// The body runs in the child after the identity drop, with `keep` moved to
// descriptors 3, 4, ... (passed to it in that order) and every other
// descriptor closed. Its result is the helper's answer.
using HelperBody = std::function<Result<std::string>(const std::vector<int>& kept)>;

// The answer pipe's descriptor in the helper (KeepOnlyFds puts it first);
// what the body keeps starts just above it.
inline constexpr int kHelperAnswerFd = 3;

// Forks the helper. `change` false (user mode) keeps our identity.
Result<HelperChild> StartUserHelper(const protocol::UserIdentity& who, bool change,
                                    std::vector<int> keep, const HelperBody& body);

// What a helper wrote, as the body's result; an empty or garbled answer
// (it was killed, or died) is an error saying so.
Result<std::string> ParseHelperAnswer(const std::string& text);

// Answers larger than this are cut (and then garbled): a helper's answer is
// a path or an error line.
inline constexpr std::size_t kMaxHelperAnswer = std::size_t{64} * 1024;

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_USER_HELPER_H_

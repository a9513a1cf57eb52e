// `dispatch`: the user-facing client. RunDispatch is main() minus the
// process: tests call it with their own streams and socket.
#ifndef HPCB_CLIENT_DISPATCH_H_
#define HPCB_CLIENT_DISPATCH_H_

#include <ostream>
#include <string>
#include <vector>

namespace hpcb::client {

struct Io {
  std::ostream& out;
  std::ostream& err;
  bool err_is_tty = false;  // attach may show a "still waiting" notice
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// `args` excludes the program name. Returns the exit code.
int RunDispatch(const std::vector<std::string>& args, Io io);

// Every subcommand, in the order `dispatch --help` lists them.
const std::vector<std::string>& SubcommandNames();

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_DISPATCH_H_

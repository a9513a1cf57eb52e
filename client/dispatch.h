// `dispatch`: the user-facing client. RunDispatch is main() minus the
// process: tests call it with their own streams and socket.
#ifndef HPCB_CLIENT_DISPATCH_H_
#define HPCB_CLIENT_DISPATCH_H_

#include <string>
#include <vector>

#include "client/io.h"

namespace hpcb::client {

// `args` excludes the program name. Returns the exit code.
int RunDispatch(const std::vector<std::string>& args, Io io);

// Every subcommand, in the order `dispatch --help` lists them.
const std::vector<std::string>& SubcommandNames();

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_DISPATCH_H_

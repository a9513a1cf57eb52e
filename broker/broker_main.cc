// hpc-batch-broker: started by hpc-batchd with fd 3 = executor channel and
// fd 4 = the listening client socket, plus the daemon's own flags; or, as
// nobody, asked by hpc-batchd to check those flags (--check-daemon-flags).
#include <cstdio>
#include <string>
#include <vector>

#include "broker/broker_app.h"
#include "broker/daemon_config.h"
#include "common/base/log.h"

int main(int argc, char** argv) {
  hpcb::SetLogRole("broker");
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == hpcb::protocol::kCheckFlagsArg) {
    return hpcb::broker::CheckDaemonFlags({args.begin() + 1, args.end()});
  }
  hpcb::broker::ParsedFlags parsed = hpcb::broker::ParseDaemonFlags(args);
  if (parsed.exit_now) {
    (void)std::fputs(parsed.output.c_str(), *parsed.exit_now == 0 ? stdout : stderr);
    return *parsed.exit_now;
  }
  hpcb::SetLogLevel(parsed.config.log_level);
  return hpcb::broker::RunBroker(parsed.config);
}

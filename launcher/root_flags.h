// How hpc-batchd reads its flags without a flag library in root.
//
// The broker binary owns the flag set (CLI11, help, units, every check):
// CheckFlagsAsNobody runs it on the argv, as nobody with no privileges, and
// it prints the help, the version or the usage error itself. Only then does
// ParseRootFlags read the flags root acts on, by one table that knows every
// flag's name and whether it takes a value. The check's answer only decides
// whether the daemon starts: no value from it reaches root, so a tampered
// check can stop the daemon and nothing more.
#ifndef HPCB_LAUNCHER_ROOT_FLAGS_H_
#define HPCB_LAUNCHER_ROOT_FLAGS_H_

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/base/result.h"
#include "protocol/root_config.h"

namespace hpcb::launcher {

// Each hpc-batchd flag, whether it takes a value, and the RootConfig member
// it sets, or none: a flag the broker alone reads. A test holds the names
// and arities to the broker's CLI11 definition
// (tests/launcher/root_flags_test.cc).
struct FlagRow {
  std::string_view name;
  bool takes_value;
  std::variant<std::monostate, std::string protocol::RootConfig::*, bool protocol::RootConfig::*,
               std::int64_t protocol::RootConfig::*>
      target;
};
const std::vector<FlagRow>& FlagTable();

// Runs `broker` (opened already: see there) with kCheckFlagsArg and `args`,
// as nobody (65534:65534, no groups) when we are root, and waits for it
// (10 s at most). Returns the exit code hpc-batchd must exit with now, or
// nothing when the flags are good and the daemon should start.
std::optional<int> CheckFlagsAsNobody(int broker_fd, const std::vector<std::string>& args);

// The root flags from an argv the check accepted; the others are skipped by
// their arity. An error names the flag (an argv the table reads otherwise
// than the broker, or a relative path).
Result<protocol::RootConfig> ParseRootFlags(const std::vector<std::string>& args);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_ROOT_FLAGS_H_

// Pure argv pre-parsing for `dispatch`: splitting `new ... -- CMD`,
// peeling leading NAME=VALUE words off the job command, and reading job
// ids as typed.
#ifndef HPCB_CLIENT_COMMAND_LINE_H_
#define HPCB_CLIENT_COMMAND_LINE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace hpcb::client {

struct SplitArgs {
  std::vector<std::string> options;  // parsed by CLI11
  // Words after the first bare `--` of a `new` invocation; nullopt when
  // the first word is not `new` or there is no `--`.
  std::optional<std::vector<std::string>> command;
};

// `args` excludes the program name. Only when args[0] is "new" and a bare
// "--" is present is everything after the first "--" the job command.
SplitArgs SplitAtDoubleDash(const std::vector<std::string>& args);

// True for words matching [A-Za-z_][A-Za-z0-9_]*=.*
bool IsAssignment(std::string_view word);

struct PeeledCommand {
  std::map<std::string, std::string> env;
  std::vector<std::string> argv;
};

// Peels leading assignments; the first non-assignment and everything after
// it stay the command. A later duplicate NAME wins.
PeeledCommand PeelAssignments(const std::vector<std::string>& words);

// `path` made absolute against `cwd` (lexically; no symlink resolution).
std::string MakeAbsolute(const std::string& path, const std::string& cwd);

// One job id as typed: digits, not 0. Read here, not by CLI11, which takes
// "-1" for 2^64 - 1. The error is "argument ID: invalid job id: '...'".
Result<std::uint64_t> ParseJobId(const std::string& word);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_COMMAND_LINE_H_

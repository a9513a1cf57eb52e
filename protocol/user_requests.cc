#include "protocol/user_requests.h"

#include <algorithm>
#include <cctype>

namespace hpcb::protocol {
namespace {

bool HasNul(const std::string& s) {
  return s.find('\0') != std::string::npos;
}

bool ValidEnvName(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

Result<void> CheckEnv(const std::map<std::string, std::string>& env) {
  std::size_t total = 0;
  for (const auto& [name, value] : env) {
    if (!ValidEnvName(name)) {
      return InvalidArgument("environment name '" + name.substr(0, 64) + "' is not valid");
    }
    if (HasNul(value))
      return InvalidArgument("environment value of " + name + " contains a NUL byte");
    total += name.size() + value.size() + 2;
  }
  if (total > kMaxEnvBytes) {
    return InvalidArgument("environment is too large (" + std::to_string(total) + " bytes, limit " +
                           std::to_string(kMaxEnvBytes) + ")");
  }
  return Ok();
}

}  // namespace

Result<void> CheckArgv(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0].empty()) return InvalidArgument("no command given");
  if (argv.size() > kMaxArgs) {
    return InvalidArgument("command has " + std::to_string(argv.size()) + " words, limit " +
                           std::to_string(kMaxArgs));
  }
  std::size_t total = 0;
  for (const std::string& word : argv) {
    if (HasNul(word)) return InvalidArgument("command contains a NUL byte");
    total += word.size() + 1;
  }
  if (total > kMaxArgBytes) {
    return InvalidArgument("command is too large (" + std::to_string(total) + " bytes, limit " +
                           std::to_string(kMaxArgBytes) + ")");
  }
  return Ok();
}

Result<void> CheckPath(const std::string& path, const char* what) {
  if (path.empty() || path[0] != '/')
    return InvalidArgument(std::string(what) + " must be absolute");
  if (path.size() > kMaxPathBytes) return InvalidArgument(std::string(what) + " is too long");
  if (HasNul(path)) return InvalidArgument(std::string(what) + " contains a NUL byte");
  return Ok();
}

Result<void> CheckNotifyCommand(const std::string& command) {
  if (command.empty() || command.size() > kMaxNotifyBytes || HasNul(command)) {
    return InvalidArgument("--notify's command must be 1 to " + std::to_string(kMaxNotifyBytes) +
                           " bytes, without a NUL byte");
  }
  return Ok();
}

bool PlausibleUserName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name[0] == '-') return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool plain = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' ||
                       c == '-' || c == '@';
    if (!plain && !(c == '$' && i + 1 == name.size())) return false;
  }
  return true;
}

Result<void> SubmitRequest::Validate() const {
  HPCB_TRY(CheckArgv(argv));
  HPCB_TRY(CheckPath(cwd, "cwd"));
  HPCB_TRY(CheckEnv(env));
  if (output) HPCB_TRY(CheckPath(*output, "output path"));
  if (error) HPCB_TRY(CheckPath(*error, "error path"));
  if (!user.empty() && !PlausibleUserName(user)) {
    return InvalidArgument("the submitter's user name is not one");
  }
  if (!home.empty()) HPCB_TRY(CheckPath(home, "home directory"));
  if (!shell.empty()) HPCB_TRY(CheckPath(shell, "login shell"));
  if ((cpu && *cpu < 1) || gpu_cores < 0 || (max_mem_gb && !(*max_mem_gb > 0)) ||
      (max_time_s && *max_time_s < 1)) {
    return InvalidArgument("resource requests must be positive");
  }
  if (cpu && *cpu > (1 << 20)) return InvalidArgument("--cpu is out of range");
  if (gpu_cores > 4096) return InvalidArgument("--gpu-cores is out of range");
  if (max_mem_gb && *max_mem_gb > 1e9) return InvalidArgument("--max-mem is out of range");
  // The cgroup takes whole bytes: a budget that rounds to nothing would
  // reach the root side as none at all, and one under a MiB runs nothing.
  if (max_mem_gb && *max_mem_gb < 0.001) {
    return InvalidArgument("--max-mem must be at least 0.001 (GiB)");
  }
  if (notify) HPCB_TRY(CheckNotifyCommand(*notify));
  if (exec_error && exec_error->size() > 8192) return InvalidArgument("exec_error is too long");
  if (after.size() > kMaxDependencies) {
    return InvalidArgument("--after names " + std::to_string(after.size()) + " jobs, limit " +
                           std::to_string(kMaxDependencies));
  }
  if (std::find(after.begin(), after.end(), 0) != after.end()) {
    return InvalidArgument("--after: job ids start at 1");
  }
  if (after_any && after.empty()) return InvalidArgument("--after-any needs job ids");
  if (min_gpu_link) {
    static const char* const kLinks[] = {"NV", "PIX", "PXB", "PHB", "NODE"};
    if (std::none_of(std::begin(kLinks), std::end(kLinks),
                     [&](const char* l) { return *min_gpu_link == l; })) {
      return InvalidArgument("--gpu-link must be one of NV, PIX, PXB, PHB, NODE");
    }
  }
  return Ok();
}

Result<void> OutputRequest::Validate() const {
  if (to) HPCB_TRY(CheckPath(*to, "--to"));
  return Ok();
}

}  // namespace hpcb::protocol

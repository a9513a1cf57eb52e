#include "protocol/launcher_messages.h"

#include "protocol/user_requests.h"

namespace hpcb::protocol {
namespace {

Result<void> CheckEnvEntries(const std::vector<std::string>& env) {
  if (env.size() > kMaxArgs) return InvalidArgument("too many environment entries");
  std::size_t bytes = 0;
  for (const auto& entry : env) {
    if (entry.find('=') == std::string::npos || entry.find('\0') != std::string::npos) {
      return InvalidArgument("environment entries must be K=V");
    }
    bytes += entry.size() + 1;
  }
  if (bytes > kMaxEnvBytes + 4096) return InvalidArgument("environment too large");
  return Ok();
}

}  // namespace

Result<void> SpawnRequest::Validate() const {
  if (id == 0) return InvalidArgument("job id must be positive");
  HPCB_TRY(who.Validate());
  HPCB_TRY(CheckArgv(argv));
  HPCB_TRY(CheckPath(cwd, "cwd"));
  HPCB_TRY(CheckEnvEntries(env));
  if (placement.cpus.empty()) return InvalidArgument("a job needs at least one cpu");
  return placement.Validate();
}

Result<void> DeliverRequest::Validate() const {
  if (id == 0) return InvalidArgument("job id must be positive");
  if (max_bytes == 0) return InvalidArgument("max_bytes must be positive");
  HPCB_TRY(who.Validate());
  return CheckPath(dest, "output path");
}

Result<void> NotifyRequest::Validate() const {
  if (id == 0) return InvalidArgument("job id must be positive");
  HPCB_TRY(who.Validate());
  HPCB_TRY(CheckNotifyCommand(command));
  HPCB_TRY(CheckPath(cwd, "cwd"));
  return CheckEnvEntries(env);
}

Result<void> EmptyDirRequest::Validate() const {
  if (id == 0) return InvalidArgument("job id must be positive");
  return who.Validate();
}

Result<void> ChildExited::Validate() const {
  if (pid <= 0) return InvalidArgument("pid must be positive");
  return Ok();
}

std::string ResolveDestination(const std::string& path, bool is_dir, std::uint64_t id,
                               std::string_view stem, std::optional<std::uint32_t> array_index) {
  if (!is_dir) return path;
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  if (dir == "/") dir.clear();
  const std::string element = array_index ? "_" + std::to_string(*array_index) : "";
  return dir + "/" + std::string(stem) + "." + std::to_string(id) + element + ".log";
}

}  // namespace hpcb::protocol

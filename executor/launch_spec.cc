#include "executor/launch_spec.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include "protocol/user_requests.h"

namespace hpcb::executor {

Result<void> LaunchSpec::Validate() const {
  if (id == 0) return InvalidArgument("spec id must be positive");
  HPCB_TRY(who.Validate());
  HPCB_TRY(protocol::CheckArgv(argv));
  HPCB_TRY(protocol::CheckPath(cwd, "cwd"));
  return Ok();
}

static std::string SpecPath(const std::string& dir, std::uint64_t id) {
  return dir + "/" + std::to_string(id) + ".json";
}

Result<std::uint64_t> SaveSpec(const std::string& specs_dir, const LaunchSpec& spec, Sync sync) {
  const std::string text = protocol::Encode(spec);
  HPCB_TRY(host::WriteFileAtomic(SpecPath(specs_dir, spec.id), text, 0600, sync));
  return static_cast<std::uint64_t>(text.size());
}

Result<LaunchSpec> LoadSpec(const std::string& specs_dir, std::uint64_t id) {
  HPCB_ASSIGN_OR_RETURN(std::string text, host::ReadSmallFile(SpecPath(specs_dir, id), 2u << 20));
  HPCB_ASSIGN_OR_RETURN(LaunchSpec spec, protocol::Decode<LaunchSpec>(text));
  if (spec.id != id) return InvalidArgument("spec file id mismatch");
  return spec;
}

Result<void> RemoveSpec(const std::string& specs_dir, std::uint64_t id) {
  const std::string path = SpecPath(specs_dir, id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return Error::FromErrno(errno, "remove " + path);
  return Ok();
}

std::vector<std::uint64_t> ListIds(const std::string& path, std::string_view suffix,
                                   std::string_view prefix) {
  std::vector<std::uint64_t> ids;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return ids;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string_view name(entry->d_name);
    if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
        !name.ends_with(suffix)) {
      continue;
    }
    name = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    std::uint64_t id = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (ec == std::errc() && end == name.data() + name.size() && name[0] != '0') ids.push_back(id);
  }
  ::closedir(dir);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace hpcb::executor

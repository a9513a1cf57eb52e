#include "common/base/exec_path.h"

#include <string_view>
#include <utility>

namespace hpcb {

std::vector<std::string> ExecCandidates(const std::string& argv0, const std::string& path_value) {
  if (argv0.find('/') != std::string::npos) return {argv0};
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (;;) {
    std::size_t colon = path_value.find(':', pos);
    std::string_view dir(path_value);
    dir = dir.substr(pos, colon == std::string::npos ? std::string_view::npos : colon - pos);
    if (dir.empty()) dir = ".";
    std::string candidate;
    candidate.reserve(dir.size() + 1 + argv0.size());
    candidate.append(dir).append(1, '/').append(argv0);
    out.push_back(std::move(candidate));
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  return out;
}

std::optional<std::string> EnvValue(const std::vector<std::string>& env, const std::string& key) {
  for (const auto& entry : env) {
    if (entry.size() > key.size() && entry.compare(0, key.size(), key) == 0 &&
        entry[key.size()] == '=') {
      return entry.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

}  // namespace hpcb

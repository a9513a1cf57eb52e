#include "client/command_line.h"

#include <algorithm>
#include <cctype>

namespace hpcb::client {
namespace {

std::optional<std::uint64_t> JobIdOf(const std::string& word) {
  const bool digits =
      !word.empty() && word.size() <= 19 &&
      std::all_of(word.begin(), word.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  if (!digits || std::stoull(word) == 0) return std::nullopt;
  return std::stoull(word);
}

}  // namespace

SplitArgs SplitAtDoubleDash(const std::vector<std::string>& args) {
  SplitArgs split;
  if (args.empty() || args[0] != "new") {
    split.options = args;
    return split;
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      split.options.assign(args.begin(), args.begin() + static_cast<long>(i));
      split.command.emplace(args.begin() + static_cast<long>(i) + 1, args.end());
      return split;
    }
  }
  split.options = args;
  return split;
}

bool IsAssignment(std::string_view word) {
  std::size_t eq = word.find('=');
  if (eq == std::string_view::npos || eq == 0) return false;
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!alpha(word[0])) return false;
  for (std::size_t i = 1; i < eq; ++i) {
    if (!alpha(word[i]) && !(word[i] >= '0' && word[i] <= '9')) return false;
  }
  return true;
}

PeeledCommand PeelAssignments(const std::vector<std::string>& words) {
  PeeledCommand peeled;
  std::size_t i = 0;
  for (; i < words.size() && IsAssignment(words[i]); ++i) {
    std::size_t eq = words[i].find('=');
    peeled.env[words[i].substr(0, eq)] = words[i].substr(eq + 1);
  }
  peeled.argv.assign(words.begin() + static_cast<long>(i), words.end());
  return peeled;
}

std::string MakeAbsolute(const std::string& path, const std::string& cwd) {
  // Like Python's os.path.abspath: join, then normalise lexically.
  std::string joined = (!path.empty() && path[0] == '/') ? path : cwd + "/" + path;
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= joined.size()) {
    std::size_t slash = joined.find('/', start);
    if (slash == std::string::npos) slash = joined.size();
    std::string part = joined.substr(start, slash - start);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = slash + 1;
  }
  std::string out;
  for (const std::string& part : parts)
    out += "/" + part;
  return out.empty() ? "/" : out;
}

Result<std::uint64_t> ParseJobId(const std::string& word) {
  std::optional<std::uint64_t> id = JobIdOf(word);
  if (!id) return InvalidArgument("argument ID: invalid job id: '" + word.substr(0, 40) + "'");
  return *id;
}

}  // namespace hpcb::client

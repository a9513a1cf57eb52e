#include "common/base/cpu_list.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace hpcb {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

Result<std::int64_t> ParseInteger(std::string_view text, std::int64_t min, std::int64_t max) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || (text.front() == '-' && min >= 0) ||
      text.front() == '+') {
    return InvalidArgument("'" + std::string(text) + "' is not an integer");
  }
  if (value < min || value > max) {
    return InvalidArgument("'" + std::string(text) + "' is out of range [" + std::to_string(min) +
                           ", " + std::to_string(max) + "]");
  }
  return value;
}

Result<std::vector<int>> ParseCpuList(std::string_view raw) {
  constexpr int kMaxId = 1 << 20;
  std::string_view text = Trim(raw);
  std::vector<int> ids;
  if (text.empty()) return ids;
  auto bad = [&raw](std::string_view why) {
    return InvalidArgument("invalid cpu list '" + std::string(raw) + "': " + std::string(why));
  };
  while (!text.empty()) {
    std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (comma != std::string_view::npos && text.empty()) return bad("trailing comma");
    std::size_t dash = item.find('-');
    auto first = ParseInteger(item.substr(0, dash), 0, kMaxId);
    if (!first) return bad("'" + std::string(item) + "' is not a cpu id or range");
    std::int64_t last = *first;
    if (dash != std::string_view::npos) {
      auto end = ParseInteger(item.substr(dash + 1), 0, kMaxId);
      if (!end) return bad("'" + std::string(item) + "' is not a cpu id or range");
      if (*end < *first) return bad("range '" + std::string(item) + "' is reversed");
      last = *end;
    }
    if (ids.size() + static_cast<std::size_t>(last - *first) > static_cast<std::size_t>(kMaxId)) {
      return bad("too many ids");
    }
    for (std::int64_t id = *first; id <= last; ++id)
      ids.push_back(static_cast<int>(id));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace hpcb

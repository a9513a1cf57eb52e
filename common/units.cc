#include "common/units.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace hpcb {
namespace {

bool AllDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<std::int64_t> UnitSeconds(char unit) {
  switch (unit) {
    case 's':
      return 1;
    case 'm':
      return 60;
    case 'h':
      return 3600;
    case 'd':
      return 86400;
    default:
      return std::nullopt;
  }
}

Error BadDuration(std::string_view text) {
  return InvalidArgument("invalid duration: '" + std::string(text) +
                         "' (use seconds or e.g. 45m, 2h, 1h30m, 1d)");
}

}  // namespace

Result<std::int64_t> ParseDuration(std::string_view raw) {
  std::string lowered(Trim(raw));
  for (char& c : lowered)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view text = lowered;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max() / 2;
  if (AllDigits(text)) {
    auto value = ParseInteger(text, 0, kMax);
    if (!value) return BadDuration(raw);
    return *value;
  }
  if (text.empty()) return BadDuration(raw);
  std::int64_t total = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t digits_end = pos;
    while (digits_end < text.size() && text[digits_end] >= '0' && text[digits_end] <= '9') {
      ++digits_end;
    }
    if (digits_end == pos || digits_end == text.size()) return BadDuration(raw);
    auto unit = UnitSeconds(text[digits_end]);
    auto count = ParseInteger(text.substr(pos, digits_end - pos), 0, kMax);
    if (!unit || !count || *count > (kMax - total) / *unit) {
      return BadDuration(raw);
    }
    total += *count * *unit;
    pos = digits_end + 1;
  }
  return total;
}

std::string FormatDuration(std::optional<std::int64_t> seconds) {
  if (!seconds) return "-";
  std::int64_t left = std::max<std::int64_t>(*seconds, 0);
  if (left == 0) return "0s";
  std::string out;
  const std::pair<std::int64_t, char> units[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
  for (auto [size, name] : units) {
    if (left >= size) {
      out += std::to_string(left / size);
      out += name;
      left %= size;
    }
  }
  return out;
}

Result<double> ParseMemoryGiB(std::string_view raw) {
  std::string_view text = Trim(raw);
  std::string number(text);
  double scale = 1.0;
  std::string lowered;
  for (char c : text)
    lowered += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view suffix : {"ib", "b", "i"}) {
    if (lowered.size() > suffix.size() &&
        std::string_view{lowered}.substr(lowered.size() - suffix.size()) == suffix) {
      lowered.resize(lowered.size() - suffix.size());
      break;
    }
  }
  if (!lowered.empty()) {
    switch (lowered.back()) {
      case 'k':
        scale = 1.0 / (1024.0 * 1024.0);
        break;
      case 'm':
        scale = 1.0 / 1024.0;
        break;
      case 'g':
        scale = 1.0;
        break;
      case 't':
        scale = 1024.0;
        break;
      default:
        scale = 0;
        break;
    }
    if (scale != 0) {
      lowered.pop_back();
    } else {
      scale = 1.0;
    }
  }
  double value = 0;
  const char* begin = lowered.data();
  const char* end = begin + lowered.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (lowered.empty() || ec != std::errc() || ptr != end || !std::isfinite(value) || value < 0 ||
      lowered.front() == '-' || lowered.front() == '+') {
    return InvalidArgument("invalid memory size '" + std::string(raw) +
                           "' (use GiB, e.g. 16 or 0.5, or a K/M/G/T suffix)");
  }
  return value * scale;
}

std::string FormatGiB(std::optional<double> gib) {
  if (!gib) return "-";
  char buffer[64];
  (void)std::snprintf(buffer, sizeof buffer, "%gG", *gib);  // %g fits in 64 bytes
  return buffer;
}

std::string GiBWords(double gib) {
  char buffer[64];
  (void)std::snprintf(buffer, sizeof buffer, "%.2f", gib);  // %.2f of a GiB figure fits
  std::string text = buffer;
  while (text.back() == '0')
    text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text + " GiB";
}

double FloorTo2(double value) {
  // The epsilon keeps 2.08 (stored as 2.0799999...) from flooring to 2.07.
  return std::floor(value * 100.0 + 1e-6) / 100.0;
}

std::string FormatCpuRanges(const std::vector<int>& unsorted) {
  std::vector<int> ids = unsorted;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1)
      ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

std::string FormatCommaList(const std::vector<int>& ids) {
  std::string out;
  for (int id : ids) {
    if (!out.empty()) out += ',';
    out += std::to_string(id);
  }
  return out;
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace hpcb

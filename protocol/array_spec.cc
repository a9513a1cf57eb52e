#include "protocol/array_spec.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "common/units.h"

namespace hpcb::protocol {
namespace {

// A whole decimal number without sign or leading '+', at most kMaxArrayIndex.
Result<std::uint32_t> ParseIndex(std::string_view text, std::string_view item) {
  std::uint32_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value > kMaxArrayIndex) {
    return InvalidArgument("--array: '" + std::string(item) + "' is not an index list item " +
                           "(N, N-M or N-M:S, indices 0 to " + std::to_string(kMaxArrayIndex) +
                           ")");
  }
  return value;
}

Result<void> TooMany() {
  return InvalidArgument("--array: more than " + std::to_string(kMaxArrayElements) +
                         " elements, the most one array may have");
}

Result<void> AddItem(std::string_view item, std::vector<std::uint32_t>& indices) {
  std::string_view range = item;
  std::uint32_t step = 1;
  if (std::size_t colon = item.find(':'); colon != std::string_view::npos) {
    HPCB_ASSIGN_OR_RETURN(step, ParseIndex(item.substr(colon + 1), item));
    if (step == 0) return InvalidArgument("--array: '" + std::string(item) + "': a step is >= 1");
    range = item.substr(0, colon);
    if (range.find('-') == std::string_view::npos) {
      return InvalidArgument("--array: '" + std::string(item) + "': a step needs a range N-M");
    }
  }
  const std::size_t dash = range.find('-');
  HPCB_ASSIGN_OR_RETURN(std::uint32_t first, ParseIndex(range.substr(0, dash), item));
  std::uint32_t last = first;
  if (dash != std::string_view::npos) {
    HPCB_ASSIGN_OR_RETURN(last, ParseIndex(range.substr(dash + 1), item));
  }
  if (last < first) {
    return InvalidArgument("--array: '" + std::string(item) + "' ends before it starts");
  }
  for (std::uint64_t i = first; i <= last; i += step) {
    if (indices.size() >= kMaxArrayElements) return TooMany();
    indices.push_back(static_cast<std::uint32_t>(i));
  }
  return Ok();
}

}  // namespace

Result<ArraySpec> ParseArraySpec(std::string_view spec) {
  if (spec.size() > kMaxArraySpecBytes) {
    return InvalidArgument("--array: the spec is longer than " +
                           std::to_string(kMaxArraySpecBytes) + " bytes");
  }
  ArraySpec parsed;
  if (std::size_t percent = spec.find('%'); percent != std::string_view::npos) {
    std::string_view limit = spec.substr(percent + 1);
    Result<std::uint32_t> throttle = ParseIndex(limit, limit);
    if (!throttle || *throttle == 0) {
      return InvalidArgument("--array: '%" + std::string(limit.substr(0, 16)) +
                             "': after % comes how many may run at once, 1 or more");
    }
    parsed.throttle = *throttle;
    spec = spec.substr(0, percent);
  }
  if (spec.empty()) return InvalidArgument("--array: no indices (e.g. 1-100, 1-100:4, 1,5,9)");
  while (true) {
    const std::size_t comma = spec.find(',');
    HPCB_TRY(AddItem(spec.substr(0, comma), parsed.indices));
    if (comma == std::string_view::npos) break;
    spec = spec.substr(comma + 1);
  }
  std::sort(parsed.indices.begin(), parsed.indices.end());
  auto repeated = std::adjacent_find(parsed.indices.begin(), parsed.indices.end());
  if (repeated != parsed.indices.end()) {
    return InvalidArgument("--array: index " + std::to_string(*repeated) + " is named twice");
  }
  return parsed;
}

Result<void> CheckArray(const std::vector<std::uint32_t>& indices,
                        const std::optional<std::uint32_t>& throttle) {
  if (indices.size() > kMaxArrayElements) return TooMany();
  if (!indices.empty() && indices.back() > kMaxArrayIndex) {
    return InvalidArgument("array indices are 0 to " + std::to_string(kMaxArrayIndex));
  }
  if (std::adjacent_find(indices.begin(), indices.end(), std::greater_equal<>()) != indices.end()) {
    return InvalidArgument("array indices must be strictly increasing");
  }
  if (throttle && (indices.empty() || *throttle == 0)) {
    return InvalidArgument("an array throttle is at least 1, and only for an array");
  }
  return Ok();
}

std::string FormatIndices(const std::vector<std::uint32_t>& indices) {
  // Indices are at most kMaxArrayIndex, so each fits an int; the folding
  // is the cpu list's.
  return FormatCpuRanges(std::vector<int>(indices.begin(), indices.end()));
}

}  // namespace hpcb::protocol

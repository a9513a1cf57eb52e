#include "launcher/private_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include "protocol/host/host_files.h"

namespace hpcb::launcher {
namespace {

// The launcher's own mappings are small: a huge one (a sanitizer's shadow
// memory) is skipped, which also bounds the residency vector, and the
// total is capped whatever the map says.
constexpr std::uintptr_t kMaxRangeBytes = std::uintptr_t{256} << 20;
constexpr std::uintptr_t kMaxClaimBytes = std::uintptr_t{4} << 20;
constexpr std::size_t kMaxMapsBytes = std::size_t{1} << 20;

// The one place an address read from the maps text becomes a pointer.
void* AddressOf(std::uintptr_t address) {
  return reinterpret_cast<void*>(address);  // NOLINT(performance-no-int-to-ptr): from maps
}

bool ParseHex(std::string_view text, std::uintptr_t& value) {
  const char* end = text.data() + text.size();
  auto [at, ec] = std::from_chars(text.data(), end, value, 16);
  return ec == std::errc() && at == end && !text.empty();
}

// Takes the next blank-separated field off the front of `rest`.
std::string_view NextField(std::string_view& rest) {
  const std::size_t begin = rest.find_first_not_of(' ');
  if (begin == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(begin);
  const std::size_t end = std::min(rest.find(' '), rest.size());
  const std::string_view field = rest.substr(0, end);
  rest.remove_prefix(end);
  return field;
}

// A maps line: "START-END PERMS OFFSET DEVICE INODE [PATH]".
bool ParseClaimable(std::string_view line, MemoryRange& range) {
  const std::string_view span = NextField(line);
  const std::string_view perms = NextField(line);
  (void)NextField(line);  // offset
  (void)NextField(line);  // device
  const std::string_view inode = NextField(line);
  const std::size_t dash = span.find('-');
  if (dash == std::string_view::npos || perms.size() != 4) return false;
  if (!ParseHex(span.substr(0, dash), range.start) || !ParseHex(span.substr(dash + 1), range.end))
    return false;
  return range.start < range.end && perms[1] == 'w' && perms[3] == 'p' && inode == "0";
}

}  // namespace

std::vector<MemoryRange> ClaimableRanges(std::string_view maps) {
  std::vector<MemoryRange> ranges;
  while (!maps.empty()) {
    const std::size_t newline = std::min(maps.find('\n'), maps.size());
    MemoryRange range;
    if (ParseClaimable(maps.substr(0, newline), range)) ranges.push_back(range);
    maps.remove_prefix(std::min(newline + 1, maps.size()));
  }
  return ranges;
}

Result<std::size_t> ClaimResidentPages(const std::vector<MemoryRange>& ranges) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  // With no length nothing is touched, but an advice the kernel does not
  // know is refused first.
  if (::madvise(AddressOf(page), 0, MADV_POPULATE_WRITE) != 0) {
    return Error::FromErrno(errno, "madvise(MADV_POPULATE_WRITE)");
  }
  const std::size_t budget = kMaxClaimBytes / page;
  std::size_t claimed = 0;
  int refused = 0;  // the first errno of a run the kernel would not take
  std::vector<unsigned char> resident;
  for (const MemoryRange& range : ranges) {
    if (range.start % page != 0 || range.end % page != 0) continue;
    if (range.end - range.start > kMaxRangeBytes) continue;
    const std::size_t pages = (range.end - range.start) / page;
    resident.assign(pages, 0);
    // Unmapped since the list was read: nothing there to claim.
    if (::mincore(AddressOf(range.start), range.end - range.start, resident.data()) != 0) continue;
    for (std::size_t first = 0; first < pages;) {
      if ((resident[first] & 1) == 0) {
        ++first;
        continue;
      }
      std::size_t last = first;
      while (last < pages && (resident[last] & 1) != 0)
        ++last;
      last = std::min(last, first + (budget - claimed));
      if (last == first) return claimed;
      // A run the kernel will not take (a mapping changed meanwhile) is
      // only a run whose first writes will trap.
      if (::madvise(AddressOf(range.start + first * page), (last - first) * page,
                    MADV_POPULATE_WRITE) == 0) {
        claimed += last - first;
      } else if (refused == 0) {
        refused = errno;
      }
      first = last;
    }
  }
  if (claimed == 0 && refused != 0) {
    return Error::FromErrno(refused, "madvise(MADV_POPULATE_WRITE)");
  }
  return claimed;
}

Result<std::size_t> ClaimOwnPages(const std::string& maps_path) {
  Result<std::string> maps = host::ReadSmallFile(maps_path, kMaxMapsBytes);
  if (!maps) {
    // Whatever went wrong reading, it says nothing of the kernel's advice.
    return Error(ErrorCode::kUnavailable, maps.error().message());
  }
  // Listed before any page is claimed: the list's own memory is then
  // claimed with the rest.
  const std::vector<MemoryRange> ranges = ClaimableRanges(*maps);
  return ClaimResidentPages(ranges);
}

bool ClaimingUnsupported(const Error& error) {
  const int err = error.sys_errno();
  return err == EINVAL || err == ENOSYS || err == EPERM;
}

}  // namespace hpcb::launcher

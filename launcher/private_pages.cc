#include "launcher/private_pages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "protocol/base/unique_fd.h"

namespace hpcb::launcher {
namespace {

constexpr std::uintptr_t kMaxRangeBytes = std::uintptr_t{256} << 20;

// The one place an address read from the maps text becomes a pointer.
void* AddressOf(std::uintptr_t address) {
  return reinterpret_cast<void*>(address);  // NOLINT(performance-no-int-to-ptr): from maps
}

bool ParseHex(std::string_view text, std::uintptr_t& value) {
  const char* end = text.data() + text.size();
  auto [at, ec] = std::from_chars(text.data(), end, value, 16);
  return ec == std::errc() && at == end && !text.empty();
}

// A maps line: "START-END PERMS OFFSET DEV INODE [PATH]".
bool ParseLine(std::string_view line, MemoryRange& range, std::string_view& perms) {
  const std::size_t space = line.find(' ');
  if (space == std::string_view::npos) return false;
  const std::string_view span = line.substr(0, space);
  const std::size_t dash = span.find('-');
  if (dash == std::string_view::npos) return false;
  if (!ParseHex(span.substr(0, dash), range.start) || !ParseHex(span.substr(dash + 1), range.end))
    return false;
  perms = line.substr(space + 1, 4);
  return perms.size() == 4 && range.start < range.end;
}

}  // namespace

std::vector<MemoryRange> PrivateWritableRanges(std::string_view maps) {
  std::vector<MemoryRange> ranges;
  while (!maps.empty()) {
    const std::size_t newline = maps.find('\n');
    const std::string_view line = maps.substr(0, newline);
    maps.remove_prefix(newline == std::string_view::npos ? maps.size() : newline + 1);
    MemoryRange range;
    std::string_view perms;
    if (ParseLine(line, range, perms) && perms[1] == 'w' && perms[3] == 'p')
      ranges.push_back(range);
  }
  return ranges;
}

Result<std::size_t> ClaimResidentPages(const std::vector<MemoryRange>& ranges) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Asked first with no length at an aligned address: an advice the kernel
  // does not know is the only EINVAL this can give.
  void* probe = AddressOf(ranges.empty() ? page : ranges.front().start);
  if (reinterpret_cast<std::uintptr_t>(probe) % page == 0 &&
      ::madvise(probe, 0, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) {
    return Error::FromErrno(EINVAL, "madvise(MADV_POPULATE_WRITE)");
  }
  std::size_t claimed = 0;
  std::vector<unsigned char> resident;
  for (const MemoryRange& range : ranges) {
    if (range.start % page != 0 || range.end % page != 0) continue;
    // The launcher's own mappings are small; a huge one (a sanitizer's
    // shadow memory) is skipped, which also bounds `resident`.
    if (range.end - range.start > kMaxRangeBytes) continue;
    void* base = AddressOf(range.start);
    const std::size_t pages = (range.end - range.start) / page;
    resident.assign(pages, 0);
    // Unmapped since the list was read: nothing there to claim.
    if (::mincore(base, range.end - range.start, resident.data()) != 0) continue;
    for (std::size_t first = 0; first < pages;) {
      if ((resident[first] & 1) == 0) {
        ++first;
        continue;
      }
      std::size_t last = first;
      while (last < pages && (resident[last] & 1) != 0)
        ++last;
      // Best effort: a run the kernel will not populate (a mapping that
      // changed meanwhile) is only a run whose first writes will trap.
      if (::madvise(AddressOf(range.start + first * page), (last - first) * page,
                    MADV_POPULATE_WRITE) == 0) {
        claimed += last - first;
      }
      first = last;
    }
  }
  return claimed;
}

Result<std::size_t> ClaimOwnPages(const std::string& maps_path) {
  UniqueFd fd(::open(maps_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::FromErrno(errno, "open " + maps_path);
  std::string maps;
  char chunk[4096];
  for (;;) {
    const ssize_t got = ::read(fd.get(), chunk, sizeof chunk);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "read " + maps_path);
    }
    maps.append(chunk, static_cast<std::size_t>(got));
  }
  // Listed before any page is claimed: the list's own memory is then
  // claimed with the rest.
  const std::vector<MemoryRange> ranges = PrivateWritableRanges(maps);
  return ClaimResidentPages(ranges);
}

}  // namespace hpcb::launcher

// Taking back the launcher's own pages after it forks a standby.
//
// A fork leaves every writable page shared with the child, copy-on-write:
// the launcher's next write to each one traps and copies it. After a
// standby fork, those writes fall in the next spawn, on the way to the
// job's exec; on a slow virtual machine each trap costs tens of
// microseconds, and a spawn wrote about twenty pages. The launcher
// therefore asks the kernel, while still idle, for a private copy of the
// resident pages of its anonymous writable mappings (heap, stack, the
// libraries' zeroed data) at once (MADV_POPULATE_WRITE, Linux 5.14),
// which the spawn then writes without a trap.
//
// The bargain: a page of memory for each page so copied (about 28 pages,
// the launcher's whole anonymous set) and the copying, done while the
// daemon waits, for a few hundred microseconds off the next job's start.
// Only pages already resident are asked for, and no file-backed mapping
// is touched, so nothing is copied that the launcher never had; the
// standby keeps the originals.
#ifndef HPCB_LAUNCHER_PRIVATE_PAGES_H_
#define HPCB_LAUNCHER_PRIVATE_PAGES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/result.h"

namespace hpcb::launcher {

// This process's own memory map. Not under --proc-root: what is claimed
// must be this process's real memory, never a description of a host.
inline constexpr char kOwnMaps[] = "/proc/self/maps";

struct MemoryRange {
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;  // past the last byte
};

// The private, writable, anonymous (inode 0) mappings listed in a
// /proc/PID/maps text; lines it cannot read are skipped.
std::vector<MemoryRange> ClaimableRanges(std::string_view maps);

// Gives this process a private copy of each resident page in `ranges`,
// skipping any range over 256 MiB and stopping after 4 MiB in all.
// Returns how many pages were claimed. Fails (EINVAL, ENOSYS or EPERM)
// where the kernel will not take MADV_POPULATE_WRITE at all: on a first
// page that it refuses with nothing claimed yet.
Result<std::size_t> ClaimResidentPages(const std::vector<MemoryRange>& ranges);

// The same for the mappings `maps_path` lists (kOwnMaps), read up to
// 1 MiB. An error from reading it has another errno than those above.
Result<std::size_t> ClaimOwnPages(const std::string& maps_path = kOwnMaps);

// Whether `error` from the above says the kernel cannot do this at all (so
// asking again is pointless), rather than that one try failed.
bool ClaimingUnsupported(const Error& error);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_PRIVATE_PAGES_H_

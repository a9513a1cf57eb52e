// Taking back the launcher's own pages after it forks a standby.
//
// A fork leaves every writable page shared with the child, copy-on-write:
// the launcher's next write to each one traps and copies it. After a
// standby fork, those writes fall in the next spawn, on the way to the
// job's exec; on a slow virtual machine each trap costs tens of
// microseconds, and a spawn wrote about twenty pages. The launcher
// therefore asks the kernel, while still idle, to give it a private copy of
// every resident writable page at once (MADV_POPULATE_WRITE, Linux 5.14),
// which the spawn then writes without a trap.
//
// The bargain: a page of memory for each page so copied (about 35 pages,
// the launcher's whole writable set) and the copying, done while the daemon
// waits, for a few hundred microseconds off the next job's start. Only
// pages already resident are asked for, so nothing the launcher never
// touched is made resident, and the standby keeps the originals.
#ifndef HPCB_LAUNCHER_PRIVATE_PAGES_H_
#define HPCB_LAUNCHER_PRIVATE_PAGES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/result.h"

namespace hpcb::launcher {

struct MemoryRange {
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;  // past the last byte
};

// The private writable mappings listed in a /proc/PID/maps text; lines it
// cannot read are skipped.
std::vector<MemoryRange> PrivateWritableRanges(std::string_view maps);

// Gives this process a private copy of each resident page in `ranges`,
// skipping any range over 256 MiB. Returns how many pages were claimed. Fails with EINVAL where the
// kernel has no MADV_POPULATE_WRITE (the caller stops asking).
Result<std::size_t> ClaimResidentPages(const std::vector<MemoryRange>& ranges);

// The same for every private writable mapping of this process, listed by
// `maps_path` (PROC_ROOT/self/maps).
Result<std::size_t> ClaimOwnPages(const std::string& maps_path);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_PRIVATE_PAGES_H_

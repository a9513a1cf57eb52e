// Facts every role reads from the kernel's files: online cpus and NUMA
// nodes, a process's start time, swap. Each takes the root it reads under
// (sysfs, /proc) so tests can point it at a fake tree in a temp directory.
#ifndef HPCB_COMMON_HOST_HOST_FILES_H_
#define HPCB_COMMON_HOST_HOST_FILES_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace hpcb::host {

// Kernel cpu lists ("0-3,5,7-8") are parsed by ParseCpuList (base/cpu_list.h).
// "0,1,2" (never ranges) as cpuset files and the launch spec want.
std::string FormatIdList(const std::vector<int>& ids);

// SYS/devices/system/cpu/online.
Result<std::set<int>> ReadOnlineCpus(const std::string& sys_root);
// SYS/devices/system/node/online; {0} when the node dir is absent.
Result<std::set<int>> ReadNumaNodes(const std::string& sys_root);

// A numeric field of /proc/<pid>/stat, numbered as proc(5) numbers them
// (4: the parent pid, 22: the start time in clock ticks), read under
// `proc_root` past the comm, which may hold spaces and parens. kNotFound
// when the process is gone.
Result<std::uint64_t> ProcStatField(int pid, int field, const std::string& proc_root = "/proc");
inline Result<std::uint64_t> ProcStartTime(int pid, const std::string& proc_root = "/proc") {
  return ProcStatField(pid, 22, proc_root);
}

// PROC/meminfo has a SwapTotal above 0 (swap is configured right now).
Result<bool> HostHasSwap(const std::string& proc_root = "/proc");

// Whole file, bounded by `cap` bytes.
Result<std::string> ReadSmallFile(const std::string& path, std::size_t cap = 65536);

// How much of an atomic write must be on disk before it returns.
//   kNow: the file and its rename (the directory).
//   kDeferred: the file, before its rename, so the rename can never leave
//     an empty file where a durable one was; the directory (which makes
//     the rename durable) is the caller's to fsync before anyone is told:
//     the specs a loop turn saves share one directory fsync. Until then a
//     machine crash may bring back the old file, never an empty one.
//   kNone: neither; only for a file whose loss in a power cut loses
//     nothing: a run record of a job that the power cut ends anyway, a
//     test's fixture.
enum class Sync { kNow, kDeferred, kNone };

// Writes `text` to `path` atomically with `mode`: a temp file beside it,
// fsync, rename, fsync of the directory, as `sync` says. A crash of the
// process leaves the old file or the new one, never a mix.
Result<void> WriteFileAtomic(const std::string& path, const std::string& text, unsigned mode,
                             Sync sync = Sync::kNow);

}  // namespace hpcb::host

#endif  // HPCB_COMMON_HOST_HOST_FILES_H_

// Facts the executor checks broker requests against, read from the kernel
// (every path is under a parameterised root so tests use a fake sysfs).
#ifndef HPCB_EXECUTOR_SYSFACTS_H_
#define HPCB_EXECUTOR_SYSFACTS_H_

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/result.h"

namespace hpcb::executor {

// Parses a kernel cpu list ("0-3,5,7-8"); rejects junk and huge ranges.
Result<std::set<int>> ParseCpuList(std::string_view text);
// "0,1,2" (never ranges) as cpuset files and the spec want.
std::string FormatIdList(const std::vector<int>& ids);

// SYS/devices/system/cpu/online.
Result<std::set<int>> ReadOnlineCpus(const std::string& sys_root);
// SYS/devices/system/node/online; {0} when the node dir is absent.
Result<std::set<int>> ReadNumaNodes(const std::string& sys_root);

// Every id of `ids` is in `allowed`, no duplicates. `what` names the field.
Result<void> CheckSubset(const std::vector<int>& ids, const std::set<int>& allowed,
                         const char* what);

// Whose job may this be? As root: never uid 0 or gid 0, and never the
// broker's service user (`broker_uid`): a socket whose peer is the broker
// itself is one the broker made up, not a user's connection. In user mode:
// only the daemon's own uid.
Result<void> CheckSubmitter(const struct ucred& peer, bool daemon_is_root,
                            std::uint32_t daemon_uid,
                            std::optional<std::uint32_t> broker_uid = std::nullopt);

// Field 22 of /proc/<pid>/stat (start time in clock ticks), read under
// `proc_root`. kNotFound when the process is gone.
Result<std::uint64_t> ProcStartTime(int pid, const std::string& proc_root = "/proc");

// PROC/meminfo has a SwapTotal above 0 (swap is configured right now).
Result<bool> HostHasSwap(const std::string& proc_root = "/proc");

// Whole file, bounded by `cap` bytes.
Result<std::string> ReadSmallFile(const std::string& path, std::size_t cap = 65536);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_SYSFACTS_H_

#include "executor/job_cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sstream>

#include "common/host/host_files.h"
#include "executor/launch_spec.h"
#include "protocol/framing.h"

namespace hpcb::executor {

namespace {

// Writes `value` to DIR/name (O_WRONLY|O_TRUNC, no O_CREAT).
Result<void> WriteControl(const std::string& dir, const std::string& name,
                          const std::string& value) {
  std::string path = dir + "/" + name;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return Error::FromErrno(errno, "open " + path);
  auto written = protocol::WriteAllToFile(fd.get(), value);
  if (!written) return written.error().WithContext("write " + path);
  return Ok();
}

// A file holding one number ("max" or garbage: none).
std::optional<std::uint64_t> SingleNumber(const std::string& path) {
  auto text = host::ReadSmallFile(path);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::uint64_t value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

}  // namespace

std::string JobCgroups::PathOf(std::uint64_t id) const {
  return root_.value_or("") + "/hpc-batch/job-" + std::to_string(id);
}

Result<UniqueFd> JobCgroups::Create(std::uint64_t id, const CgroupLimits& limits) const {
  if (!root_) return UniqueFd();
  std::string dir = PathOf(id);
  if (::mkdir(dir.c_str(), 0755) != 0) {
    if (errno != EEXIST) return Error::FromErrno(errno, "mkdir " + dir);
    // A leftover of an earlier daemon (ids restart after a lost queue):
    // empty, it is reused; with processes in it, the job would share its
    // cpus, memory budget and OOM kills with strangers.
    if (Populated(id)) {
      return Error(ErrorCode::kAlreadyExists, dir + " already holds processes");
    }
  }
  HPCB_TRY(WriteControl(dir, "cpuset.cpus", host::FormatIdList(limits.cpus)));
  HPCB_TRY(WriteControl(dir, "cpuset.mems", host::FormatIdList(limits.mems)));
  if (limits.memory_max) {
    HPCB_TRY(WriteControl(dir, "memory.max", std::to_string(*limits.memory_max)));
  }
  Result<void> swap_off = WriteControl(dir, "memory.swap.max", "0");
  // Unreadable counts as swap present, which only makes memory.swap.max required.
  Result<bool> swap = host::HostHasSwap();
  const bool host_has_swap = limits.host_has_swap.value_or(!swap || *swap);
  if (!swap_off && (host_has_swap || swap_off.error().code() != ErrorCode::kNotFound)) {
    return swap_off.error().WithContext("cannot turn swap off for the job");
  }
  HPCB_TRY(WriteControl(dir, "memory.oom.group", "1"));
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return Error::FromErrno(errno, "open " + dir);
  return fd;
}

// One counter of a flat-keyed cgroup file ("key value" lines, e.g.
// memory.events, cgroup.events); 0 when the file or the key is missing.
long long JobCgroups::EventCount(std::uint64_t id, const char* file,
                                 const std::string& wanted) const {
  if (!root_) return 0;
  auto text = host::ReadSmallFile(PathOf(id) + "/" + file);
  if (!text) return 0;
  std::istringstream in(*text);
  std::string key;
  long long value = 0;
  while (in >> key >> value) {
    if (key == wanted) return value;
  }
  return 0;
}

Result<protocol::JobUsage> JobCgroups::Usage(std::uint64_t id) const {
  if (!root_) return Error(ErrorCode::kUnavailable, "no cgroups (--no-cgroups)");
  const std::string dir = PathOf(id);
  auto stat = host::ReadSmallFile(dir + "/cpu.stat");
  if (!stat) return stat.error().WithContext("job " + std::to_string(id) + "'s cpu usage");
  protocol::JobUsage usage;
  usage.source = protocol::UsageSource::kCgroup;
  std::istringstream in(*stat);
  std::string key;
  std::uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "user_usec") usage.user_s = static_cast<double>(value) / 1e6;
    if (key == "system_usec") usage.system_s = static_cast<double>(value) / 1e6;
  }
  usage.peak_memory_bytes = SingleNumber(dir + "/memory.peak");
  usage.oom_kills =
      static_cast<std::uint64_t>(std::max(0LL, EventCount(id, "memory.events", "oom_kill")));
  usage.peak_pids = SingleNumber(dir + "/pids.peak");
  return usage;
}

bool JobCgroups::OomKilled(std::uint64_t id) const {
  return EventCount(id, "memory.events", "oom_kill") > 0;
}

Result<void> JobCgroups::Kill(std::uint64_t id) const {
  if (!root_) return Ok();
  return WriteControl(PathOf(id), "cgroup.kill", "1");
}

bool JobCgroups::Populated(std::uint64_t id) const {
  return EventCount(id, "cgroup.events", "populated") != 0;
}

Result<void> JobCgroups::Remove(std::uint64_t id) const {
  if (!root_) return Ok();
  std::string dir = PathOf(id);
  if (::access(dir.c_str(), F_OK) != 0) return Ok();
  (void)Kill(id);
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) return Error::FromErrno(errno, "rmdir " + dir);
  return Ok();
}

std::vector<std::uint64_t> JobCgroups::PruneEmpty(const std::set<std::uint64_t>& keep) const {
  std::vector<std::uint64_t> removed;
  if (!root_) return removed;
  // Exactly the names PathOf makes.
  for (std::uint64_t id : ListIds(*root_ + "/hpc-batch", "", "job-")) {
    // EBUSY (populated, or has children) and ENOTEMPTY: not ours to remove.
    if (!keep.contains(id) && ::rmdir(PathOf(id).c_str()) == 0) removed.push_back(id);
  }
  return removed;
}

}  // namespace hpcb::executor

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

std::string JobCgroupPath(const std::string& cgroup_root, std::uint64_t id) {
  return cgroup_root + "/hpc-batch/job-" + std::to_string(id);
}

Result<void> WriteControl(const std::string& dir, const std::string& name,
                          const std::string& value) {
  std::string path = dir + "/" + name;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return Error::FromErrno(errno, "open " + path);
  auto written = protocol::WriteAllToFile(fd.get(), value);
  if (!written) return written.error().WithContext("write " + path);
  return Ok();
}

Result<UniqueFd> CreateJobCgroup(const std::string& cgroup_root, std::uint64_t id,
                                 const CgroupLimits& limits) {
  std::string dir = JobCgroupPath(cgroup_root, id);
  if (::mkdir(dir.c_str(), 0755) != 0) {
    if (errno != EEXIST) return Error::FromErrno(errno, "mkdir " + dir);
    // A leftover of an earlier daemon (ids restart after a lost queue):
    // empty, it is reused; with processes in it, the job would share its
    // cpus, memory budget and OOM kills with strangers.
    if (JobCgroupPopulated(cgroup_root, id)) {
      return Error(ErrorCode::kAlreadyExists, dir + " already holds processes");
    }
  }
  HPCB_TRY(WriteControl(dir, "cpuset.cpus", host::FormatIdList(limits.cpus)));
  HPCB_TRY(WriteControl(dir, "cpuset.mems", host::FormatIdList(limits.mems)));
  if (limits.memory_max) {
    HPCB_TRY(WriteControl(dir, "memory.max", std::to_string(*limits.memory_max)));
  }
  Result<void> swap_off = WriteControl(dir, "memory.swap.max", "0");
  if (!swap_off && (limits.host_has_swap || swap_off.error().code() != ErrorCode::kNotFound)) {
    return swap_off.error().WithContext("cannot turn swap off for the job");
  }
  HPCB_TRY(WriteControl(dir, "memory.oom.group", "1"));
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return Error::FromErrno(errno, "open " + dir);
  return fd;
}

namespace {

// One counter of a flat-keyed cgroup file ("key value" lines, e.g.
// memory.events, cgroup.events); 0 when the file or the key is missing.
long long EventCount(const std::string& cgroup_root, std::uint64_t id, const char* file,
                     const std::string& wanted) {
  auto text = host::ReadSmallFile(JobCgroupPath(cgroup_root, id) + "/" + file);
  if (!text) return 0;
  std::istringstream in(*text);
  std::string key;
  long long value = 0;
  while (in >> key >> value) {
    if (key == wanted) return value;
  }
  return 0;
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

Result<protocol::JobUsage> ReadJobCgroupUsage(const std::string& cgroup_root, std::uint64_t id) {
  const std::string dir = JobCgroupPath(cgroup_root, id);
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
  usage.oom_kills = static_cast<std::uint64_t>(
      std::max(0LL, EventCount(cgroup_root, id, "memory.events", "oom_kill")));
  usage.peak_pids = SingleNumber(dir + "/pids.peak");
  return usage;
}

bool JobWasOomKilled(const std::string& cgroup_root, std::uint64_t id) {
  return EventCount(cgroup_root, id, "memory.events", "oom_kill") > 0;
}

Result<void> KillJobCgroup(const std::string& cgroup_root, std::uint64_t id) {
  return WriteControl(JobCgroupPath(cgroup_root, id), "cgroup.kill", "1");
}

bool JobCgroupPopulated(const std::string& cgroup_root, std::uint64_t id) {
  return EventCount(cgroup_root, id, "cgroup.events", "populated") != 0;
}

Result<void> RemoveJobCgroup(const std::string& cgroup_root, std::uint64_t id) {
  std::string dir = JobCgroupPath(cgroup_root, id);
  if (::access(dir.c_str(), F_OK) != 0) return Ok();
  (void)KillJobCgroup(cgroup_root, id);
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) return Error::FromErrno(errno, "rmdir " + dir);
  return Ok();
}

std::vector<std::uint64_t> PruneEmptyJobCgroups(const std::string& cgroup_root,
                                                const std::set<std::uint64_t>& keep) {
  std::vector<std::uint64_t> removed;
  // Exactly the names JobCgroupPath makes.
  for (std::uint64_t id : ListIds(cgroup_root + "/hpc-batch", "", "job-")) {
    // EBUSY (populated, or has children) and ENOTEMPTY: not ours to remove.
    if (!keep.contains(id) && ::rmdir(JobCgroupPath(cgroup_root, id).c_str()) == 0)
      removed.push_back(id);
  }
  return removed;
}

}  // namespace hpcb::executor

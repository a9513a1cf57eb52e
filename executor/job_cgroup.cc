#include "executor/job_cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "executor/sysfacts.h"
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
  auto written = protocol::WriteAll(fd.get(), value);
  if (!written) return written.error().WithContext("write " + path);
  return Ok();
}

Result<UniqueFd> CreateJobCgroup(const std::string& cgroup_root, std::uint64_t id,
                                 const CgroupLimits& limits) {
  std::string dir = JobCgroupPath(cgroup_root, id);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Error::FromErrno(errno, "mkdir " + dir);
  }
  HPCB_TRY(WriteControl(dir, "cpuset.cpus", FormatIdList(limits.cpus)));
  HPCB_TRY(WriteControl(dir, "cpuset.mems", FormatIdList(limits.mems)));
  if (limits.memory_max) {
    HPCB_TRY(WriteControl(dir, "memory.max", std::to_string(*limits.memory_max)));
  }
  (void)WriteControl(dir, "memory.swap.max", "0");
  (void)WriteControl(dir, "memory.oom.group", "1");
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return Error::FromErrno(errno, "open " + dir);
  return fd;
}

bool JobWasOomKilled(const std::string& cgroup_root, std::uint64_t id) {
  auto text = ReadSmallFile(JobCgroupPath(cgroup_root, id) + "/memory.events");
  if (!text) return false;
  std::istringstream in(*text);
  std::string key;
  long long value = 0;
  while (in >> key >> value) {
    if (key == "oom_kill") return value > 0;
  }
  return false;
}

Result<void> KillJobCgroup(const std::string& cgroup_root, std::uint64_t id) {
  return WriteControl(JobCgroupPath(cgroup_root, id), "cgroup.kill", "1");
}

Result<void> RemoveJobCgroup(const std::string& cgroup_root, std::uint64_t id) {
  std::string dir = JobCgroupPath(cgroup_root, id);
  if (::access(dir.c_str(), F_OK) != 0) return Ok();
  (void)KillJobCgroup(cgroup_root, id);
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) return Error::FromErrno(errno, "rmdir " + dir);
  return Ok();
}

}  // namespace hpcb::executor

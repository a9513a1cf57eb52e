#include "executor/host_facts.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "protocol/base/unique_fd.h"
#include "protocol/daemon_config.h"

namespace hpcb::executor {

Result<gid_t> ResolveAdminGroup(const std::string& name) {
  if (!name.empty()) {
    if (struct group* g = ::getgrnam(name.c_str())) return g->gr_gid;
  } else {
    for (const auto& candidate : protocol::AdminGroupCandidates()) {
      if (struct group* g = ::getgrnam(candidate.c_str())) return g->gr_gid;
    }
  }
  std::string existing;
  for (const auto& candidate : protocol::AdminGroupCandidates()) {
    if (::getgrnam(candidate.c_str()) != nullptr) {
      existing += (existing.empty() ? "" : ", ") + candidate;
    }
  }
  std::string message = name.empty()
                            ? std::string("none of the default admin groups exists on this system")
                            : "--admin-group '" + name + "' does not exist on this system";
  if (!existing.empty()) message += "; try one of: " + existing;
  return Error(ErrorCode::kNotFound, message);
}

Result<UserRecord> LookUpUser(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  int rc = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
  if (rc != 0 || found == nullptr) {
    return Error(ErrorCode::kNotFound, "uid " + std::to_string(uid) + " has no passwd entry");
  }
  UserRecord record;
  record.who.uid = uid;
  record.who.gid = pw.pw_gid;
  record.who.user = pw.pw_name;
  record.facts.user = pw.pw_name;
  record.facts.home = pw.pw_dir ? pw.pw_dir : "/";
  record.facts.shell = pw.pw_shell ? pw.pw_shell : "";
  int ngroups = 64;
  std::vector<gid_t> groups(static_cast<size_t>(ngroups));
  while (::getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &ngroups) < 0) {
    if (ngroups > 65536) return Error(ErrorCode::kInternal, "too many groups");
    groups.resize(static_cast<size_t>(ngroups) * 2);
    ngroups = static_cast<int>(groups.size());
  }
  groups.resize(static_cast<size_t>(ngroups));
  record.who.groups.assign(groups.begin(), groups.end());
  return record;
}

int CountGpus(const std::string& nvidia_smi) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return 0;
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  const char* argv[] = {nvidia_smi.c_str(), "-L", nullptr};
  pid_t pid = ::fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    ::dup2(write_end.get(), 1);
    int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      ::dup2(devnull, 2);
    }
    ::execvp(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  write_end.reset();
  std::string text;
  for (;;) {
    struct pollfd pfd {read_end.get(), POLLIN, 0};
    if (::poll(&pfd, 1, 10000) <= 0) break;
    char buf[4096];
    ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n <= 0 || text.size() > 1 << 20) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::istringstream in(text);
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    if (line.rfind("GPU ", 0) == 0) ++count;
  }
  return count;
}

}  // namespace hpcb::executor

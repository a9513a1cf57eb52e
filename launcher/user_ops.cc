#include "launcher/user_ops.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "protocol/base/unique_fd.h"
#include "protocol/framing.h"

namespace hpcb::launcher {

int DropIdentity(bool change, uid_t uid, gid_t gid, const gid_t* groups, int ngroups) {
  if (!change) return 0;
  if (uid == 0 || gid == 0) return EPERM;
  if (::setgroups(static_cast<size_t>(ngroups), groups) != 0) return errno;
  if (::setresgid(gid, gid, gid) != 0) return errno;
  if (::setresuid(uid, uid, uid) != 0) return errno;
  uid_t r, e, s;
  gid_t rg, eg, sg;
  if (::getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid) return EPERM;
  if (::getresgid(&rg, &eg, &sg) != 0 || rg != gid || eg != gid || sg != gid) return EPERM;
  return 0;
}

Result<void> CheckIdentityAllowed(const protocol::UserIdentity& who, bool as_root) {
  if (as_root) {
    if (who.uid == 0 || who.gid == 0) {
      return Error(ErrorCode::kPermissionDenied, "refusing to act as uid 0 or gid 0");
    }
    for (auto g : who.groups) {
      if (g == 0) return Error(ErrorCode::kPermissionDenied, "refusing supplementary group 0");
    }
    return Ok();
  }
  if (who.uid != ::getuid()) {
    return Error(ErrorCode::kPermissionDenied, "user mode: only the daemon's own uid");
  }
  return Ok();
}

std::string ResolveDestination(const std::string& path, bool is_dir, std::uint64_t id) {
  if (!is_dir) return path;
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir == "/") dir.clear();
  return dir + "/output." + std::to_string(id) + ".log";
}

Result<std::string> CheckDestinationHere(const std::string& path, std::uint64_t id) {
  if (path.empty() || path[0] != '/') return InvalidArgument("output path must be absolute");
  struct stat st {};
  bool is_dir = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  std::string dest = ResolveDestination(path, is_dir, id);
  std::string parent = dest.substr(0, dest.rfind('/'));
  if (parent.empty()) parent = "/";
  struct stat pst {};
  if (::stat(parent.c_str(), &pst) != 0) {
    return Error::FromErrno(errno, "cannot save output there: " + parent);
  }
  if (!S_ISDIR(pst.st_mode)) {
    return InvalidArgument("cannot save output there: " + parent + " is not a directory");
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    return Error(ErrorCode::kPermissionDenied, "cannot save output there: cannot write to " + parent);
  }
  return dest;
}

Result<void> DeliverHere(int buffer_fd, const std::string& dest) {
  UniqueFd out(::open(dest.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640));
  if (!out.valid()) return Error::FromErrno(errno, "could not save output to " + dest);
  char buf[65536];
  off_t offset = 0;
  for (;;) {
    ssize_t n = ::pread(buffer_fd, buf, sizeof buf, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "read output buffer");
    }
    if (n == 0) break;
    offset += n;
    auto written = protocol::WriteAll(out.get(), std::string_view(buf, static_cast<size_t>(n)));
    if (!written) return written.error().WithContext("could not save output to " + dest);
  }
  if (::fsync(out.get()) != 0 && errno != EINVAL) {
    return Error::FromErrno(errno, "could not save output to " + dest);
  }
  return Ok();
}

Result<std::string> RunAsUser(const protocol::UserIdentity& who, bool change,
                              Result<std::string> (*body)(void*), void* arg, int timeout_s) {
  std::vector<gid_t> groups(who.groups.begin(), who.groups.end());
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno(errno, "fork");
  if (pid == 0) {
    // Single-threaded parent: allocation in this child is safe; it never execs.
    read_end.reset();
    int err = DropIdentity(change, who.uid, who.gid, groups.data(), static_cast<int>(groups.size()));
    std::string message;
    if (err != 0) {
      message = std::string("E") + "cannot switch to user " + who.user + ": " + std::strerror(err);
    } else {
      Result<std::string> out = body(arg);
      message = out ? "O" + *out : "E" + out.error().message();
    }
    (void)protocol::WriteAll(write_end.get(), message);
    ::_exit(0);
  }
  write_end.reset();
  std::string text;
  bool timed_out = false;
  for (;;) {
    struct pollfd pfd {read_end.get(), POLLIN, 0};
    int ready = ::poll(&pfd, 1, timeout_s * 1000);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = true;
      break;
    }
    char buf[4096];
    ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > 65536) break;
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return Error(ErrorCode::kUnavailable, "user helper timed out");
  if (text.empty()) return Error(ErrorCode::kInternal, "user helper died without an answer");
  if (text[0] == 'O') return text.substr(1);
  return Error(ErrorCode::kFailedPrecondition, text.substr(1));
}

}  // namespace hpcb::launcher

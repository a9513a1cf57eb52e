#include "as_user/user_side_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "common/base/unique_fd.h"
#include "protocol/framing.h"

namespace hpcb::as_user {

namespace {

// Why `st`, found at the destination, must not be replaced; "" if it may.
std::string InTheWay(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link, which is never followed or replaced";
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (!S_ISREG(st.st_mode)) return "it is not a regular file (a FIFO, socket or device)";
  if (st.st_uid != ::geteuid()) return "it belongs to another user";
  if (st.st_nlink != 1) return "it has other hard links";
  return "";
}

// ".NAME.hpcb-XXXXXXXXXXXXXXXX": unguessable, so another user cannot plant
// the temp name in a shared directory ahead of us (O_EXCL would refuse it).
std::string TempNameFor(const std::string& name) {
  std::uint64_t random = 0;
  if (::getrandom(&random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
    random = static_cast<std::uint64_t>(::getpid()) * 2654435761u ^
             static_cast<std::uint64_t>(::time(nullptr));
  }
  char hex[17];
  (void)std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(random));
  return "." + name + ".hpcb-" + hex;
}

Result<void> CopyAll(int from, int to, std::uint64_t size) {
  char buf[65536];
  off_t offset = 0;
  for (;;) {
    ssize_t n = ::pread(from, buf, sizeof buf, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "read the output buffer");
    }
    if (n == 0) break;
    offset += n;
    // A job still writing (a background child outlived it) could grow the
    // buffer past what was checked: stop at the size we agreed to copy.
    if (static_cast<std::uint64_t>(offset) > size) {
      n -= static_cast<ssize_t>(static_cast<std::uint64_t>(offset) - size);
      offset = static_cast<off_t>(size);
    }
    HPCB_TRY(protocol::WriteAllToFile(to, std::string_view(buf, static_cast<size_t>(n))));
    if (static_cast<std::uint64_t>(offset) >= size) break;
  }
  return Ok();
}

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

void EmptyBelow(UniqueFd dir, const std::string& at, dev_t dev, int depth,
                std::optional<Error>& left);

// The directory `name` in `parent` (at `path` below the top) emptied, then
// removed; `dev` is the top's filesystem, `depth` the levels still allowed.
Result<void> RemoveTree(int parent, const std::string& name, const std::string& path, dev_t dev,
                        int depth, std::optional<Error>& left) {
  UniqueFd sub(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!sub.valid() || ::fstat(sub.get(), &st) != 0) return Error::FromErrno(errno, "open " + path);
  if (st.st_dev != dev)
    return Error(ErrorCode::kFailedPrecondition, path + " is on another filesystem");
  if (depth == 0) return Error(ErrorCode::kFailedPrecondition, path + " is nested too deep");
  EmptyBelow(std::move(sub), path + "/", dev, depth - 1, left);
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0) {
    return Error::FromErrno(errno, "remove " + path);
  }
  return Ok();
}

// Removes what `dir` (taken) holds; `at` prefixes its entries' paths. The
// first thing that stays goes into `left`.
void EmptyBelow(UniqueFd dir, const std::string& at, dev_t dev, int depth,
                std::optional<Error>& left) {
  std::unique_ptr<DIR, DirCloser> stream(::fdopendir(dir.get()));
  if (!stream) {
    if (!left) left = Error::FromErrno(errno, "read " + (at.empty() ? "the directory" : at));
    return;
  }
  const int fd = dir.release();
  while (const struct dirent* entry = ::readdir(stream.get())) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    // Most entries are files: one unlink each. A directory answers EISDIR.
    if (::unlinkat(fd, name.c_str(), 0) == 0 || errno == ENOENT) continue;
    const int err = errno;
    Result<void> removed = err == EISDIR
                               ? RemoveTree(fd, name, at + name, dev, depth, left)
                               : Result<void>(Error::FromErrno(err, "remove " + at + name));
    if (!removed && removed.error().sys_errno() != ENOENT && !left) left = removed.error();
  }
}

}  // namespace

Result<void> DeliverHere(int buffer_fd, const std::string& dest, std::uint64_t max_bytes) {
  const std::size_t slash = dest.rfind('/');
  if (dest.empty() || dest[0] != '/' || slash + 1 >= dest.size()) {
    return InvalidArgument(dest + " is not an absolute file path");
  }
  const std::string dir = slash == 0 ? "/" : dest.substr(0, slash);
  const std::string name = dest.substr(slash + 1);
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) return Error::FromErrno(errno, "open " + dir);
  struct stat existing {};
  if (::fstatat(dir_fd.get(), name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0) {
    std::string why = InTheWay(existing);
    if (!why.empty()) return Error(ErrorCode::kFailedPrecondition, dest + " is in the way: " + why);
  } else if (errno != ENOENT) {
    return Error::FromErrno(errno, "stat " + dest);
  }
  struct stat buffer {};
  if (::fstat(buffer_fd, &buffer) != 0) return Error::FromErrno(errno, "stat the output buffer");
  if (existing.st_ino == buffer.st_ino && existing.st_dev == buffer.st_dev &&
      existing.st_nlink > 0) {
    // Copied onto itself, the output would be deleted with the buffer.
    return Error(ErrorCode::kFailedPrecondition, dest + " is the job's own output buffer");
  }
  const auto size = static_cast<std::uint64_t>(buffer.st_size);
  if (size > max_bytes) {
    return Error(ErrorCode::kResourceExhausted, "the output is " + std::to_string(size) +
                                                    " bytes, over the delivery limit of " +
                                                    std::to_string(max_bytes) + " bytes");
  }
  // The copy is written unnamed (O_TMPFILE) and given a name, through
  // /proc/self/fd, only once whole, so a helper killed mid-copy (its
  // deadline, or its user) leaves nothing in the user's directory. Without
  // O_TMPFILE or /proc, a named temporary from the start.
  const std::string temp = TempNameFor(name);
  UniqueFd out;
  if (::access("/proc/self/fd", X_OK) == 0) {
    out.reset(::openat(dir_fd.get(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0640));
  }
  const bool unnamed = out.valid();
  if (!unnamed) {
    out.reset(::openat(dir_fd.get(), temp.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640));
  }
  if (!out.valid()) return Error::FromErrno(errno, "create a file in " + dir);
  Result<void> written = CopyAll(buffer_fd, out.get(), size);
  if (written && ::fsync(out.get()) != 0) written = Error::FromErrno(errno, "fsync");
  // Our own /proc/self/fd entry is open to us however the process is sealed.
  const std::string self = "/proc/self/fd/" + std::to_string(out.get());
  if (written && unnamed &&
      ::linkat(AT_FDCWD, self.c_str(), dir_fd.get(), temp.c_str(), AT_SYMLINK_FOLLOW) != 0) {
    written = Error::FromErrno(errno, "name the copy in " + dir);
  }
  if (written && ::renameat(dir_fd.get(), temp.c_str(), dir_fd.get(), name.c_str()) != 0) {
    written = Error::FromErrno(errno, "rename into place");
  }
  if (!written) {
    (void)::unlinkat(dir_fd.get(), temp.c_str(), 0);
    return written;
  }
  // The rename is durable only once the directory is; the buffer is
  // dropped as soon as we answer.
  (void)::fsync(dir_fd.get());
  return Ok();
}

Result<void> NotifyHere(const std::string& command, const std::string& cwd,
                        const std::vector<std::string>& env, std::chrono::seconds limit) {
  if (::chdir(cwd.c_str()) != 0) return Error::FromErrno(errno, "could not enter " + cwd);
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null.valid()) return Error::FromErrno(errno, "open /dev/null");
  std::vector<const char*> argv{"sh", "-c", command.c_str(), nullptr};
  std::vector<const char*> envp;
  for (const std::string& entry : env)
    envp.push_back(entry.c_str());
  envp.push_back(nullptr);
  // Without pidfds (Linux before 5.3) nothing could bound it: refused
  // before it runs at all.
  if (!UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0))).valid()) {
    return Error::FromErrno(errno, "cannot watch the command (pidfd_open)");
  }
  const pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno(errno, "fork");
  if (pid == 0) {
    for (int fd = 0; fd <= 2; ++fd)
      (void)::dup2(null.get(), fd);
    ::syscall(SYS_close_range, 3u, ~0u, 0u);  // the helper's answer pipe too
    // Every disposition is SIG_DFL already (as_user_main.cc).
    sigset_t none;
    sigemptyset(&none);
    // A session of its own, as a job's: no terminal the daemon was started
    // from is the command's (TIOCSTI), and its group is its own.
    if (::setsid() >= 0 && ::sigprocmask(SIG_SETMASK, &none, nullptr) == 0) {
      ::execve("/bin/sh", const_cast<char* const*>(argv.data()),
               const_cast<char* const*>(envp.data()));
    }
    ::_exit(127);
  }
  // The shell's pidfd is readable once it exits, and it stays unreaped
  // until the kill: its pid names the group until every process left in
  // the group has been sent SIGKILL.
  UniqueFd exited(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  struct pollfd watch {
    exited.get(), POLLIN, 0
  };
  const bool in_time =
      exited.valid() && ::poll(&watch, 1, static_cast<int>(limit.count()) * 1000) == 1;
  (void)::kill(-pid, SIGKILL);
  int status = 0;
  (void)::waitpid(pid, &status, 0);
  if (!exited.valid()) return Error(ErrorCode::kInternal, "cannot watch the command (pidfd_open)");
  if (!in_time)
    return Error(ErrorCode::kUnavailable,
                 "was killed after " + std::to_string(limit.count()) + " s");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Ok();
  return Error(ErrorCode::kFailedPrecondition,
               WIFEXITED(status) ? "exited " + std::to_string(WEXITSTATUS(status))
                                 : "was killed by signal " + std::to_string(WTERMSIG(status)));
}

Result<void> EmptyDirHere(int dir_fd) {
  struct stat top {};
  if (::fstat(dir_fd, &top) != 0) return Error::FromErrno(errno, "stat the directory");
  // A description of our own: the walk's reading never moves the caller's.
  UniqueFd dir(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return Error::FromErrno(errno, "open the directory");
  std::optional<Error> left;
  EmptyBelow(std::move(dir), "", top.st_dev, kMaxEmptyDepth, left);
  if (left) return *left;
  return Ok();
}

namespace {

// A count from the command line: digits only, the whole word.
std::optional<std::uint64_t> Count(const std::string& word) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (word.empty() || error != std::errc() || end != word.data() + word.size()) return std::nullopt;
  return value;
}

}  // namespace

Result<void> RunRequest(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  const std::string op = args.empty() ? "" : args[0];
  if (op == "deliver" && args.size() == 3 && Count(args[2])) {
    return DeliverHere(kRequestFd, args[1], *Count(args[2]));
  }
  // A day at most: the poll below takes milliseconds as an int.
  if (op == "notify" && args.size() == 4 && Count(args[2]) && *Count(args[2]) <= 86400) {
    return NotifyHere(args[3], args[1], env, std::chrono::seconds(*Count(args[2])));
  }
  if (op == "empty" && args.size() == 1) return EmptyDirHere(kRequestFd);
  return InvalidArgument("hpc-batch-as-user: not a request: '" + op + "' with " +
                         std::to_string(args.size()) + " word(s)");
}

std::string EncodeAnswer(const Result<void>& result) {
  if (result) return "O";
  std::string text = "E";
  text += static_cast<char>(result.error().code());
  return text + result.error().message();
}

}  // namespace hpcb::as_user

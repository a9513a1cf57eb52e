#include "executor/job_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "protocol/framing.h"

namespace hpcb::executor {
namespace {

Result<void> ChownFd(int fd, std::optional<JobDirOwner> owner, const std::string& what) {
  if (owner && ::fchown(fd, owner->uid, owner->gid) != 0) {
    return Error::FromErrno(errno, "chown " + what);
  }
  return Ok();
}

// Creates `name` in the dir with exactly `mode` (umask aside) and `owner`,
// never through an existing name or link. `what` names it in errors.
Result<UniqueFd> CreateFreshFile(int dir_fd, const std::string& name, mode_t mode,
                                 std::optional<JobDirOwner> owner, const std::string& what) {
  UniqueFd fd(
      ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid()) return Error::FromErrno(errno, "create " + what);
  if (::fchmod(fd.get(), mode) != 0) return Error::FromErrno(errno, "chmod " + what);
  HPCB_TRY(ChownFd(fd.get(), owner, what));
  return fd;
}

}  // namespace

Result<UniqueFd> CreateJobDir(const std::string& path, std::optional<JobDirOwner> owner,
                              const std::optional<std::string>& info_text, bool error_buffer) {
  if (::mkdir(path.c_str(), 0700) != 0) return Error::FromErrno(errno, "mkdir " + path);
  // Still root's 0700 here, so nobody else can have swapped a name yet: the
  // files are created in place, with no temp name and rename.
  HPCB_ASSIGN_OR_RETURN(UniqueFd dir, OpenJobDir(path));
  HPCB_TRY(CreateFreshFile(dir.get(), "output", 0640, owner, path + "/output"));
  if (error_buffer) HPCB_TRY(CreateFreshFile(dir.get(), "error", 0640, owner, path + "/error"));
  if (info_text) {
    HPCB_ASSIGN_OR_RETURN(
        UniqueFd info, CreateFreshFile(dir.get(), "info.json", 0640, owner, path + "/info.json"));
    HPCB_TRY(protocol::WriteAllToFile(info.get(), *info_text));
  }
  // Mode first, while root still owns it: afterwards only CAP_FOWNER could.
  if (::fchmod(dir.get(), 0750) != 0) return Error::FromErrno(errno, "chmod " + path);
  HPCB_TRY(ChownFd(dir.get(), owner, path));
  return dir;
}

Result<UniqueFd> OpenJobDir(const std::string& path) {
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) return Error::FromErrno(errno, "open " + path);
  return dir;
}

Result<UniqueFd> OpenJobBuffer(int dir_fd, int flags, std::optional<JobDirOwner> owner,
                               const std::string& name) {
  const std::string what = "the " + name + " buffer";
  // O_NONBLOCK: opening a FIFO must fail or return at once, never wait.
  UniqueFd fd(
      ::openat(dir_fd, name.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) return Error::FromErrno(errno, "open " + what);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno(errno, "stat " + what);
  if (!S_ISREG(st.st_mode)) return InvalidArgument(what + " is not a regular file");
  if (st.st_nlink != 1) return InvalidArgument(what + " has other hard links");
  if (owner && st.st_uid != owner->uid) {
    return InvalidArgument(what + " is not owned by the job's user");
  }
  int status = ::fcntl(fd.get(), F_GETFL);
  if (status < 0 || ::fcntl(fd.get(), F_SETFL, status & ~O_NONBLOCK) != 0) {
    return Error::FromErrno(errno, "fcntl " + what);
  }
  return fd;
}

Result<void> ReplaceJobFile(int dir_fd, const std::string& name, const std::string& text,
                            mode_t mode, std::optional<JobDirOwner> owner) {
  const std::string tmp = "." + name + ".tmp";
  Result<UniqueFd> fd = CreateFreshFile(dir_fd, tmp, mode, owner, tmp);
  if (!fd && fd.error().sys_errno() == EEXIST) {
    // A leftover, or something the user put there: removed only when
    // found, so the usual case costs no failing unlink.
    (void)::unlinkat(dir_fd, tmp.c_str(), 0);
    fd = CreateFreshFile(dir_fd, tmp, mode, owner, tmp);
  }
  if (!fd) return fd.error();
  HPCB_TRY(protocol::WriteAllToFile(fd->get(), text));
  // No fsync: these files are views of the spec, which is the durable
  // record. After a crash ext4 (auto_da_alloc on a rename over a name)
  // shows the old or the new text; elsewhere the view may be stale or
  // empty until the job's next change rewrites it.
  if (::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    return Error::FromErrno(errno, "rename " + tmp + " to " + name);
  }
  return Ok();
}

Result<UniqueFd> RemoveJobDir(const std::string& path) {
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) {
    if (errno == ENOENT) return UniqueFd();
    return Error::FromErrno(errno, "open " + path);
  }
  // A name the user replaced goes as a name (unlinkat follows nothing); a
  // directory put in one's place fails (EISDIR) and stays for the helper.
  for (const char* name : {"output", "error", "info.json", ".info.json.tmp"})
    (void)::unlinkat(dir.get(), name, 0);
  // STATE/jobs is root's: the name is the dir we opened.
  if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return UniqueFd();
  if (errno != ENOTEMPTY && errno != EEXIST) return Error::FromErrno(errno, "remove " + path);
  return dir;
}

}  // namespace hpcb::executor

#include "executor/job_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

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

std::vector<std::string> EntryNames(int dir_fd) {
  std::vector<std::string> names;
  int copy = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return names;
  DIR* dir = ::fdopendir(copy);
  if (dir == nullptr) {
    ::close(copy);
    return names;
  }
  ::rewinddir(dir);
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(dir);
  return names;
}

// Empties the directory open as `dir_fd`, as far as it may: names are only
// ever unlinked or opened with O_NOFOLLOW|O_DIRECTORY, so a symlink swapped
// in at any moment is removed as a link, never walked through; and an entry
// not owned by `owner` (or on another filesystem) is left where it is, since
// root's override must not delete what the job's user could not. `kept`
// counts what was left.
Result<void> EmptyDir(int dir_fd, const std::string& where, int depth_left,
                      std::optional<JobDirOwner> owner, dev_t device, std::size_t& kept) {
  for (const std::string& name : EntryNames(dir_fd)) {
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return Error::FromErrno(errno, "stat " + where + "/" + name);
    }
    if ((owner && st.st_uid != owner->uid) || st.st_dev != device) {
      ++kept;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (::unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT) {
        return Error::FromErrno(errno, "remove " + where + "/" + name);
      }
      continue;
    }
    if (depth_left <= 0)
      return Error(ErrorCode::kFailedPrecondition, where + " is nested too deep to remove");
    UniqueFd sub(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.valid()) return Error::FromErrno(errno, "open " + where + "/" + name);
    // Checked again through the fd: the name may have been swapped since.
    struct stat opened {};
    if (::fstat(sub.get(), &opened) != 0)
      return Error::FromErrno(errno, "stat " + where + "/" + name);
    if ((owner && opened.st_uid != owner->uid) || opened.st_dev != device) {
      ++kept;
      continue;
    }
    const std::size_t before = kept;
    HPCB_TRY(EmptyDir(sub.get(), where + "/" + name, depth_left - 1, owner, device, kept));
    if (kept != before) continue;
    if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return Error::FromErrno(errno, "remove " + where + "/" + name);
    }
  }
  return Ok();
}

}  // namespace

Result<UniqueFd> CreateJobDir(const std::string& path, std::optional<JobDirOwner> owner,
                              const std::optional<std::string>& info_text) {
  if (::mkdir(path.c_str(), 0700) != 0) return Error::FromErrno(errno, "mkdir " + path);
  // Still root's 0700 here, so nobody else can have swapped a name yet: the
  // files are created in place, with no temp name and rename.
  HPCB_ASSIGN_OR_RETURN(UniqueFd dir, OpenJobDir(path));
  HPCB_ASSIGN_OR_RETURN(UniqueFd buffer,
                        CreateFreshFile(dir.get(), "output", 0640, owner, path + "/output"));
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

Result<UniqueFd> OpenJobBuffer(int dir_fd, int flags, std::optional<JobDirOwner> owner) {
  // O_NONBLOCK: opening a FIFO must fail or return at once, never wait.
  UniqueFd fd(::openat(dir_fd, "output", flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) return Error::FromErrno(errno, "open the output buffer");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno(errno, "stat the output buffer");
  if (!S_ISREG(st.st_mode)) return InvalidArgument("the output buffer is not a regular file");
  if (st.st_nlink != 1) return InvalidArgument("the output buffer has other hard links");
  if (owner && st.st_uid != owner->uid) {
    return InvalidArgument("the output buffer is not owned by the job's user");
  }
  int status = ::fcntl(fd.get(), F_GETFL);
  if (status < 0 || ::fcntl(fd.get(), F_SETFL, status & ~O_NONBLOCK) != 0) {
    return Error::FromErrno(errno, "fcntl the output buffer");
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

Result<void> RemoveJobDir(const std::string& path, std::optional<JobDirOwner> owner,
                          int max_depth) {
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) {
    if (errno == ENOENT) return Ok();
    if (errno == ENOTDIR || errno == ELOOP) {
      if (::unlink(path.c_str()) == 0) return Ok();
    }
    return Error::FromErrno(errno, "open " + path);
  }
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0) return Error::FromErrno(errno, "stat " + path);
  std::size_t kept = 0;
  HPCB_TRY(EmptyDir(dir.get(), path, max_depth, owner, st.st_dev, kept));
  dir.reset();
  if (kept > 0) {
    return Error(ErrorCode::kFailedPrecondition,
                 path + " holds " + std::to_string(kept) + " entr" + (kept == 1 ? "y" : "ies") +
                     " the job's user does not own (or on another filesystem); left for an admin");
  }
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT)
    return Error::FromErrno(errno, "remove " + path);
  return Ok();
}

}  // namespace hpcb::executor

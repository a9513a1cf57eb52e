#include "executor/tree_removal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace hpcb::executor {
namespace {

// `fd` as a directory stream (taking it), or null.
DIR* StreamOf(UniqueFd fd) {
  DIR* dir = ::fdopendir(fd.get());
  if (dir != nullptr) (void)fd.release();
  return dir;
}

}  // namespace

Result<void> TreeRemoval::OpenTop() {
  opened_ = true;
  UniqueFd top(::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top.valid()) {
    if (errno == ENOENT || ((errno == ENOTDIR || errno == ELOOP) && ::unlink(path_.c_str()) == 0)) {
      done_ = true;
      return Ok();
    }
    done_ = true;
    return Error::FromErrno(errno, "open " + path_);
  }
  struct stat st {};
  if (::fstat(top.get(), &st) != 0) return Error::FromErrno(errno, "stat " + path_);
  device_ = st.st_dev;
  DIR* stream = StreamOf(std::move(top));
  if (stream == nullptr) return Error::FromErrno(errno, "read " + path_);
  levels_.push_back(Level{std::unique_ptr<DIR, DirCloser>(stream), "", 0});
  return Ok();
}

Result<bool> TreeRemoval::Step(std::size_t& budget) {
  if (!opened_) {
    if (Result<void> opened = OpenTop(); !opened) {
      done_ = true;
      return opened.error();
    }
  }
  for (; !done_ && budget > 0; --budget) {
    Level& level = levels_.back();
    errno = 0;
    const struct dirent* entry = ::readdir(level.stream.get());
    if (entry == nullptr) {
      if (errno != 0) return Error::FromErrno(errno, "read a directory under " + path_);
      Level finished = std::move(levels_.back());
      levels_.pop_back();
      HPCB_TRY(Finish(std::move(finished)));
      continue;
    }
    if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
    HPCB_TRY(Visit(*entry));
  }
  return done_;
}

Result<void> TreeRemoval::Visit(const struct dirent& entry) {
  const int dir_fd = ::dirfd(levels_.back().stream.get());
  const char* name = entry.d_name;
  struct stat st {};
  if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return Ok();
    return Error::FromErrno(errno, "stat " + std::string(name) + " under " + path_);
  }
  if ((owner_ && st.st_uid != owner_->uid) || st.st_dev != device_) {
    ++kept_;
    return Ok();
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(dir_fd, name, 0) != 0 && errno != ENOENT) {
      return Error::FromErrno(errno, "remove " + std::string(name) + " under " + path_);
    }
    return Ok();
  }
  if (static_cast<int>(levels_.size()) > max_depth_) {
    too_deep_ = true;
    ++kept_;
    return Ok();
  }
  UniqueFd sub(::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!sub.valid()) return Error::FromErrno(errno, "open " + std::string(name) + " under " + path_);
  // Checked again through the fd: the name may have been swapped since.
  struct stat opened {};
  if (::fstat(sub.get(), &opened) != 0) {
    return Error::FromErrno(errno, "stat " + std::string(name) + " under " + path_);
  }
  if ((owner_ && opened.st_uid != owner_->uid) || opened.st_dev != device_) {
    ++kept_;
    return Ok();
  }
  DIR* stream = StreamOf(std::move(sub));
  if (stream == nullptr) return Error::FromErrno(errno, "read " + std::string(name));
  levels_.push_back(Level{std::unique_ptr<DIR, DirCloser>(stream), name, kept_});
  return Ok();
}

Result<void> TreeRemoval::Finish(Level level) {
  level.stream.reset();
  // A level that kept something keeps itself, and so every level above.
  if (kept_ != level.kept_before) {
    if (levels_.empty()) done_ = true;
    return Ok();
  }
  if (levels_.empty()) {
    done_ = true;
    if (::rmdir(path_.c_str()) != 0 && errno != ENOENT) {
      return Error::FromErrno(errno, "remove " + path_);
    }
    return Ok();
  }
  const int parent = ::dirfd(levels_.back().stream.get());
  if (::unlinkat(parent, level.name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return Error::FromErrno(errno, "remove " + level.name + " under " + path_);
  }
  return Ok();
}

Result<void> TreeRemoval::Outcome() const {
  if (too_deep_)
    return Error(ErrorCode::kFailedPrecondition, path_ + " is nested too deep to remove");
  if (kept_ > 0) {
    return Error(ErrorCode::kFailedPrecondition,
                 path_ + " holds " + std::to_string(kept_) + " entr" + (kept_ == 1 ? "y" : "ies") +
                     " the job's user does not own (or on another filesystem); left for an admin");
  }
  return Ok();
}

Result<void> RemoveJobDir(const std::string& path, std::optional<JobDirOwner> owner,
                          int max_depth) {
  TreeRemoval removal(path, owner, max_depth);
  std::size_t unbounded = SIZE_MAX;
  HPCB_TRY(removal.Step(unbounded));
  return removal.Outcome();
}

}  // namespace hpcb::executor

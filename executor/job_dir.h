// Root's access to STATE/jobs/<id>, a directory the job's user owns.
//
// The trap: once the directory is chowned to the user, every name in it is
// the user's to replace between two of our system calls: a symlink to
// /etc/shadow, a hard link to a root file, a FIFO that blocks us forever.
// So root never acts on a path inside it. It opens the directory itself
// (STATE/jobs is root's, so that name is stable), then works relative to
// that fd with O_NOFOLLOW, checks what it opened with fstat before using
// it, and changes ownership only through fds (fchown), never by name.
#ifndef HPCB_EXECUTOR_JOB_DIR_H_
#define HPCB_EXECUTOR_JOB_DIR_H_

#include <sys/types.h>

#include <optional>
#include <string>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace hpcb::executor {

// Who should own what we create, when we run as root; nullopt in user mode.
struct JobDirOwner {
  uid_t uid = 0;
  gid_t gid = 0;
};

// Creates `path` (0750) with its empty `output` buffer (and `error`, for
// a job whose stderr has its own file) and, given
// `info_text`, `info.json` holding it (both 0640), all chowned through fds;
// the parent must be root's. Fails if `path` exists. Without `info_text`
// the caller writes info.json later (ReplaceJobFile): a job that starts at
// once gets it written once, as started, instead of twice.
Result<UniqueFd> CreateJobDir(const std::string& path, std::optional<JobDirOwner> owner,
                              const std::optional<std::string>& info_text,
                              bool error_buffer = false);

// Opens an existing job dir: a real directory, never a symlink.
Result<UniqueFd> OpenJobDir(const std::string& path);

// Opens the job's buffer `name` (`output`, or `error`) for `flags`
// (O_RDONLY, or O_WRONLY|O_APPEND).
// Refused unless it is a regular file with one link and, with `owner`,
// owned by that uid: a swapped-in FIFO, device, symlink or hard link fails
// here instead of blocking root or redirecting its writes.
Result<UniqueFd> OpenJobBuffer(int dir_fd, int flags, std::optional<JobDirOwner> owner,
                               const std::string& name = "output");

// Replaces `name` in the dir with `text` (mode, owner set on the temp fd
// before the rename, so the name never points at a root-owned file). Not
// fsynced: for derived views such as info.json, never for records.
Result<void> ReplaceJobFile(int dir_fd, const std::string& name, const std::string& text,
                            mode_t mode, std::optional<JobDirOwner> owner);

// Removes the job dir at `path` as far as root does: the files it made
// there (output, error, info.json and info.json's temp name), by name and
// never following a link, then the dir itself. An invalid fd when it is
// gone (or was never there); when its user left more in it, the dir's fd
// (O_NOFOLLOW) instead, for a helper that has become the user to empty
// (protocol::EmptyDirRequest). Root never walks the user's tree.
Result<UniqueFd> RemoveJobDir(const std::string& path);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_JOB_DIR_H_

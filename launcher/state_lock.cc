#include "launcher/state_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "protocol/framing.h"

namespace hpcb::launcher {

Result<UniqueFd> LockStateDir(const std::string& state_dir) {
  const std::string path = state_dir + "/lock";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::FromErrno(errno, "cannot open " + path);
  struct flock whole {};  // l_whence SEEK_SET, l_start and l_len 0: the whole file
  whole.l_type = F_WRLCK;
  if (::fcntl(fd.get(), F_SETLK, &whole) != 0) {
    if (errno != EAGAIN && errno != EACCES) return Error::FromErrno(errno, "cannot lock " + path);
    char text[32] = {};
    const ssize_t got = ::pread(fd.get(), text, sizeof text - 1, 0);
    const long holder = got > 0 ? std::strtol(text, nullptr, 10) : 0;
    return Error(ErrorCode::kFailedPrecondition,
                 "another hpc-batchd " +
                     (holder > 0 ? "(pid " + std::to_string(holder) + ") " : std::string()) +
                     "holds " + state_dir +
                     "; stop it first, or give this one its own "
                     "--state-dir");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0) return Error::FromErrno(errno, "cannot write " + path);
  HPCB_TRY(protocol::WriteAllAt(fd.get(), pid, 0, path));
  return fd;
}

}  // namespace hpcb::launcher

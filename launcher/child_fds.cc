#include "launcher/child_fds.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace hpcb::launcher {

bool KeepOnlyFds(std::vector<int>& fds, int first) {
  // First out of the way (above anything first + n could name), then down into
  // place: a direct dup2 could clobber a descriptor still to be moved.
  constexpr int kScratch = 64;
  for (int& fd : fds) {
    if (fd < 0) continue;
    int moved = ::fcntl(fd, F_DUPFD, kScratch + static_cast<int>(fds.size()));
    if (moved < 0) return false;
    fd = moved;
  }
  int next = first;
  for (int& fd : fds) {
    if (fd < 0) continue;
    if (::dup2(fd, next) < 0) return false;
    fd = next++;
  }
  ::syscall(SYS_close_range, static_cast<unsigned>(next), ~0u, 0u);
  return true;
}

}  // namespace hpcb::launcher

#include "launcher/gpu_mask.h"

#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace hpcb::launcher {

std::vector<int> CardNodes(const std::string& dev_dir) {
  std::vector<int> cards;
  DIR* dir = ::opendir(dev_dir.c_str());
  if (dir == nullptr) return cards;
  while (const struct dirent* entry = ::readdir(dir)) {
    const char* name = entry->d_name;
    if (std::strncmp(name, "nvidia", 6) != 0) continue;
    const char* digits = name + 6;
    const std::size_t length = std::strlen(digits);
    // "nvidia" + 1..6 digits: never nvidiactl, nvidia-uvm, nvidia-modeset.
    if (length == 0 || length > 6 || std::strspn(digits, "0123456789") != length) continue;
    cards.push_back(static_cast<int>(std::strtol(digits, nullptr, 10)));  // 1..6 digits: fits
  }
  ::closedir(dir);
  std::sort(cards.begin(), cards.end());
  cards.erase(std::unique(cards.begin(), cards.end()), cards.end());
  return cards;
}

std::vector<std::string> NodesToHide(const std::string& dev_dir, const std::vector<int>& present,
                                     const std::vector<int>& allocated) {
  std::vector<std::string> hide;
  for (int card : present) {
    if (std::find(allocated.begin(), allocated.end(), card) == allocated.end()) {
      hide.push_back(dev_dir + "/nvidia" + std::to_string(card));
    }
  }
  return hide;
}

Result<void> ProbeGpuMasking() {
  const pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno(errno, "fork");
  if (pid == 0) ::_exit(::unshare(CLONE_NEWNS) == 0 ? 0 : errno);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Error::FromErrno(errno, "waitpid");
  }
  const int err = WIFEXITED(status) ? WEXITSTATUS(status) : EINVAL;
  if (err == 0) return Ok();
  return Error(ErrorCode::kFailedPrecondition,
               std::string("cannot unshare a mount namespace to hide unallocated GPUs (") +
                   std::strerror(err) + "); pass --no-gpu-mask to run without it");
}

int HideNodes(const std::vector<std::string>& nodes) {
  if (nodes.empty()) return 0;
  if (::unshare(CLONE_NEWNS) != 0) return errno;
  // Private first: the bind mounts below must not reach the host's view.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  for (const std::string& node : nodes) {
    if (::mount("/dev/null", node.c_str(), nullptr, MS_BIND, nullptr) != 0) return errno;
  }
  return 0;
}

}  // namespace hpcb::launcher

#include "launcher/gpu_mask.h"

#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "protocol/host/host_files.h"

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

std::vector<int> DriverCards(const std::string& driver_dir) {
  std::vector<int> cards;
  DIR* dir = ::opendir(driver_dir.c_str());
  if (dir == nullptr) return cards;
  while (const struct dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    Result<std::string> text =
        host::ReadSmallFile(driver_dir + "/" + entry->d_name + "/information", 16384);
    if (!text) continue;
    // Each field starts a line: "Name:<tabs and spaces>value".
    const std::string lines = "\n" + *text;
    auto field = [&](std::string_view name) -> std::string {
      const std::size_t at = lines.find("\n" + std::string(name) + ":");
      if (at == std::string::npos) return "";
      std::size_t from = at + name.size() + 2;
      from = lines.find_first_not_of(" \t", from);
      if (from == std::string::npos) return "";
      return lines.substr(from, lines.find('\n', from) - from);
    };
    // A card the driver was told to leave alone (NVreg_ExcludedGpus) is
    // listed but gets no node; it is no card a job could open.
    if (field("GPU Excluded").rfind("Yes", 0) == 0) continue;
    const std::string minor = field("Device Minor");
    const std::size_t length = std::strspn(minor.c_str(), "0123456789");
    if (length == 0 || length > 6) continue;
    cards.push_back(static_cast<int>(std::strtol(minor.c_str(), nullptr, 10)));  // 1..6 digits
  }
  ::closedir(dir);
  std::sort(cards.begin(), cards.end());
  cards.erase(std::unique(cards.begin(), cards.end()), cards.end());
  return cards;
}

std::vector<int> CardsWithoutNodes(const std::vector<int>& driver,
                                   const std::vector<int>& present) {
  std::vector<int> missing;
  for (int card : driver) {
    if (std::find(present.begin(), present.end(), card) == present.end()) missing.push_back(card);
  }
  return missing;
}

Error MissingNodesError(const std::string& dev_dir, const std::vector<int>& missing) {
  std::string cards;
  for (int card : missing)
    cards += (cards.empty() ? "" : ", ") + std::to_string(card);
  return Error(ErrorCode::kFailedPrecondition,
               "the NVIDIA driver has card(s) " + cards + " but " + dev_dir + "/nvidia" +
                   std::to_string(missing.front()) +
                   " does not exist, and a node made while a job runs could not be hidden from "
                   "it; create every card's node at boot (nvidia-persistenced, or the driver's "
                   "udev rule), or run the daemon with --no-gpu-mask");
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
  // Bounded like every wait of the launcher, though the child only makes
  // one call: a start-up that hangs here would hang every job with it.
  constexpr int kProbeDeadlineMs = 5000;
  int status = 0;
  pid_t done = 0;
  for (int waited = 0; done == 0 && waited < kProbeDeadlineMs; waited += 10) {
    done = ::waitpid(pid, &status, WNOHANG);
    if (done < 0 && errno == EINTR) done = 0;
    if (done < 0) return Error::FromErrno(errno, "waitpid");
    if (done == 0) ::usleep(10'000);
  }
  if (done == 0) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return Error(ErrorCode::kFailedPrecondition,
                 "the mount namespace probe did not end within 5 s; pass --no-gpu-mask to run "
                 "without hiding unallocated GPUs");
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

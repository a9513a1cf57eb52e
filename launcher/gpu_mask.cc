#include "launcher/gpu_mask.h"

#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "common/host/host_files.h"
#include "launcher/child_reap.h"

namespace hpcb::launcher {
namespace {

// A card's number as the driver writes it: 1 to 6 decimal digits and
// nothing else (so it fits an int), or none.
std::optional<int> CardNumber(std::string_view digits) {
  if (digits.empty() || digits.size() > 6 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  int number = 0;
  for (char digit : digits)
    number = number * 10 + (digit - '0');
  return number;
}

std::vector<int> SortedUnique(std::vector<int> cards) {
  std::sort(cards.begin(), cards.end());
  cards.erase(std::unique(cards.begin(), cards.end()), cards.end());
  return cards;
}

}  // namespace

std::vector<int> CardNodes(const std::string& dev_dir) {
  std::vector<int> cards;
  DIR* dir = ::opendir(dev_dir.c_str());
  if (dir == nullptr) return cards;
  while (const struct dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    // "nvidia" and a number: never nvidiactl, nvidia-uvm, nvidia-modeset.
    if (name.substr(0, 6) != "nvidia") continue;
    if (std::optional<int> card = CardNumber(name.substr(6))) cards.push_back(*card);
  }
  ::closedir(dir);
  return SortedUnique(std::move(cards));
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
    const std::string minor_field = field("Device Minor");
    std::string_view minor = minor_field;
    minor = minor.substr(0, minor.find_last_not_of(" \t\r") + 1);
    if (std::optional<int> card = CardNumber(minor)) cards.push_back(*card);
  }
  ::closedir(dir);
  return SortedUnique(std::move(cards));
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
  const Reaped probe = ReapWithin(pid, std::chrono::seconds(5), std::chrono::milliseconds(10));
  if (probe.how == Reaped::How::kNotOurs)
    return Error(ErrorCode::kInternal, "the mount namespace probe was reaped elsewhere");
  if (probe.how == Reaped::How::kKilled) {
    return Error(ErrorCode::kFailedPrecondition,
                 "the mount namespace probe did not end within 5 s; pass --no-gpu-mask to run "
                 "without hiding unallocated GPUs");
  }
  const int status = probe.status;
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

// Hiding the GPUs a job was not given. The job child enters a mount
// namespace of its own in which every per-card node it was not allocated
// (GPU_DEV_DIR/nvidiaN) is /dev/null, bind-mounted over it; the control
// nodes (nvidiactl, nvidia-uvm, nvidia-modeset, nvidia-caps) stay, since
// the driver needs them for the cards the job does have. Why a mount
// namespace rather than a cgroup device program: docs/design.md, "GPUs a
// job was not given".
#ifndef HPCB_LAUNCHER_GPU_MASK_H_
#define HPCB_LAUNCHER_GPU_MASK_H_

#include <string>
#include <vector>

#include "common/base/result.h"

namespace hpcb::launcher {

// The N of every GPU_DEV_DIR/nvidiaN (digits only after "nvidia"), sorted.
// A missing directory has none.
std::vector<int> CardNodes(const std::string& dev_dir);

// The minor numbers of the cards the NVIDIA driver has: the "Device
// Minor:" line of DRIVER_DIR/<bus id>/information. Empty without the
// driver; a card whose file cannot be read or parsed is left out.
std::vector<int> DriverCards(const std::string& driver_dir);

// The driver's cards with no node in `present`. Such a node can be made
// after a job has started (the driver's setuid nvidia-modprobe makes one on
// first CUDA use), and it would appear in the job's view unhidden; the
// launcher refuses starts while any is missing.
std::vector<int> CardsWithoutNodes(const std::vector<int>& driver, const std::vector<int>& present);

// Names the missing cards, the first missing node, and the cure.
Error MissingNodesError(const std::string& dev_dir, const std::vector<int>& missing);

// The nodes to hide from a job given `allocated`: every present card not
// in it. A job given none hides them all; a card it was given that is not
// present is ignored.
std::vector<std::string> NodesToHide(const std::string& dev_dir, const std::vector<int>& present,
                                     const std::vector<int>& allocated);

// Start-up: whether this process may make the mount namespace at all (a
// child tries unshare(CLONE_NEWNS) and exits). The error is the refusal the
// daemon stops with, naming --no-gpu-mask.
Result<void> ProbeGpuMasking();

// In the job child, before it drops root: a private mount namespace with
// /dev/null over each of `nodes`. Returns 0 or the errno of the step that
// failed. Allocates nothing. Nothing to hide: no namespace at all.
int HideNodes(const std::vector<std::string>& nodes);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_GPU_MASK_H_

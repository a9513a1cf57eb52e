// RootConfig: the hpc-batchd flags the root side acts on. The launcher
// reads them from its argv (launcher/root_flags.h) and hands them, with the
// ids it looked up, to the executor as one message in the executor's argv:
// the executor parses no flags. The broker reads the whole flag set itself
// (broker/daemon_config.h, a RootConfig plus the scheduling flags).
#ifndef HPCB_PROTOCOL_ROOT_CONFIG_H_
#define HPCB_PROTOCOL_ROOT_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>

#include "common/base/result.h"
#include "protocol/codec.h"

namespace hpcb::protocol {

inline constexpr const char* kVersion = "0.1.0";
inline constexpr int kExitConfig = 78;  // EX_CONFIG: a refusal, not a crash
inline constexpr const char* kDefaultSocket = "/run/hpc-batch/hpc-batch.sock";
// `hpc-batch-broker --check-daemon-flags ARGS` checks hpc-batchd's argv for
// the launcher (launcher/root_flags.h): exit 0, start; kFlagsAnswered, it
// printed the help or the version, exit 0; anything else, exit with it.
inline constexpr const char* kCheckFlagsArg = "--check-daemon-flags";
inline constexpr int kFlagsAnswered = 3;
// The launcher <-> executor protocol (launcher_messages.h) this build
// speaks. The launcher hands it to the executor it starts, in RootConfig:
// an executor from another release (installed under a running launcher)
// refuses to start rather than misread a spawn.
inline constexpr std::int64_t kLauncherProtocol = 2;

struct RootConfig {
  std::string socket = kDefaultSocket;
  std::string state_dir = "/var/lib/hpc-batch";
  std::string dev_dir = "/dev/hpc-batch";
  bool no_cgroups = false;
  bool no_dev_dir = false;
  std::string log_level = "info";
  std::string sys_root = "/sys";
  std::string cgroup_root = "/sys/fs/cgroup";
  // Where the launcher reads sys/fs/suid_dumpable, and nothing else
  // (launcher/dumpable_check.h).
  std::string proc_root = "/proc";
  // Each job runs in a mount namespace where the per-card nodes it was not
  // given (GPU_DEV_DIR/nvidiaN) are /dev/null; --no-gpu-mask turns it off.
  bool no_gpu_mask = false;
  std::string gpu_dev_dir = "/dev";
  // Where the NVIDIA driver lists its cards (one directory per card, its
  // `information` naming the card's minor number): a card listed there
  // whose node is missing refuses every start, since a node made later
  // would appear in a running job's view unhidden.
  std::string gpu_driver_dir = "/proc/driver/nvidia/gpus";
  std::string admin_group;                // empty: first of wheel, sudo, adm, staff
  std::string broker_user = "hpc-batch";  // ignored in user mode
  // MiB of launch specs plus undelivered output one user may hold, so that
  // one user cannot fill the state directory for everyone.
  std::int64_t max_user_state_mib = 1024;
  // Output larger than this is not delivered (it is kept, and the job says
  // so): a sparse multi-GiB buffer would otherwise fill the destination.
  std::int64_t max_output_mib = 8192;

  // Looked up by the launcher as root, for the executor, which is linked
  // statically and never loads an NSS module. Unset in user mode.
  std::optional<std::uint32_t> admin_gid;
  std::optional<std::uint32_t> broker_uid;  // unset: no such user
  std::int64_t launcher_protocol = kLauncherProtocol;

  HPCB_FIELDS(socket, state_dir, dev_dir, no_cgroups, no_dev_dir, log_level, sys_root, cgroup_root,
              proc_root, no_gpu_mask, gpu_dev_dir, gpu_driver_dir, admin_group, broker_user,
              max_user_state_mib, max_output_mib, admin_gid, broker_uid, launcher_protocol)
  // Every path absolute, both limits positive, this build's launcher
  // protocol.
  Result<void> Validate() const;
};

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_ROOT_CONFIG_H_

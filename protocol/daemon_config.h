// DaemonConfig: the flags of hpc-batchd. The launcher parses them and hands
// the same argv to the executor and broker it starts, so all three roles
// read one definition.
#ifndef HPCB_PROTOCOL_DAEMON_CONFIG_H_
#define HPCB_PROTOCOL_DAEMON_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/result.h"

namespace hpcb::protocol {

inline constexpr const char* kVersion = "0.1.0";
inline constexpr int kExitConfig = 78;  // EX_CONFIG: a refusal, not a crash
inline constexpr const char* kDefaultSocket = "/run/hpc-batch/hpc-batch.sock";

struct DaemonConfig {
  std::int64_t max_lifetime_s = 86400;
  bool list_is_public = false;
  std::string admin_group;  // empty: first of wheel, sudo, adm, staff
  std::string socket = kDefaultSocket;
  std::string state_dir = "/var/lib/hpc-batch";
  std::string dev_dir = "/dev/hpc-batch";
  std::int64_t keep_finished = 50;
  std::int64_t reserve_cpu = 2;
  // "core": jobs get whole physical cores (all SMT siblings), so no two
  // jobs share one; "thread": each logical cpu is handed out on its own.
  std::string cpu_unit = "core";
  double reserve_mem_gib = 2.0;
  double min_job_mem_gib = 2.0;
  bool no_cgroups = false;
  bool no_dev_dir = false;
  std::string schedule = "fifo-strict";
  std::string log_level = "info";
  std::string sys_root = "/sys";
  std::string cgroup_root = "/sys/fs/cgroup";
  // Where the launcher reads sys/fs/suid_dumpable, and nothing else
  // (launcher/dumpable_check.h).
  std::string proc_root = "/proc";
  std::string nvidia_smi = "nvidia-smi";
  // Each job runs in a mount namespace where the per-card nodes it was not
  // given (GPU_DEV_DIR/nvidiaN) are /dev/null; --no-gpu-mask turns it off.
  bool no_gpu_mask = false;
  std::string gpu_dev_dir = "/dev";
  // Where the NVIDIA driver lists its cards (one directory per card, its
  // `information` naming the card's minor number): a card listed there
  // whose node is missing refuses every start, since a node made later
  // would appear in a running job's view unhidden.
  std::string gpu_driver_dir = "/proc/driver/nvidia/gpus";
  std::string broker_user = "hpc-batch";  // ignored in user mode
  // Per-user limits, so that one user cannot fill the queue or the state
  // directory for everyone: queued jobs, and MiB of launch specs plus
  // undelivered output held for them.
  std::int64_t max_queued_per_user = 10000;
  std::int64_t max_user_state_mib = 1024;
  // Output larger than this is not delivered (it is kept, and the job says
  // so): a sparse multi-GiB buffer would otherwise fill the destination.
  std::int64_t max_output_mib = 8192;
};

struct ParsedFlags {
  DaemonConfig config;
  std::optional<int> exit_now;  // --help/--version/usage error: exit code
  std::string output;           // what to print before exiting
};

// Parses hpc-batchd's argv (CLI11). Never throws.
ParsedFlags ParseDaemonFlags(const std::vector<std::string>& args);

// The inverse: flags that reproduce `config`, for the child roles.
std::vector<std::string> ToFlags(const DaemonConfig& config);

// What only the host's account database can answer (the admin group's
// gid, the broker's uid), looked up by the launcher and handed to the
// executor as flags of its own, so that the executor, linked statically,
// never loads an NSS module.
struct ResolvedIds {
  std::optional<std::uint32_t> admin_gid;
  std::optional<std::uint32_t> broker_uid;  // none: no such user
};
std::vector<std::string> ToFlags(const ResolvedIds& ids);

// Removes what ToFlags(ResolvedIds) appended from the end of `args` and
// returns it; a missing, repeated or non-numeric value is an error naming
// the flag.
Result<ResolvedIds> TakeResolvedIds(std::vector<std::string>& args);

// The candidates tried, in order, when --admin-group is not given.
const std::vector<std::string>& AdminGroupCandidates();

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_DAEMON_CONFIG_H_

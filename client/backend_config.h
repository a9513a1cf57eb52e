// Which backend `dispatch` talks to: the local hpc-batch daemon (the
// default) or a Slurm cluster through Slurm's own commands.
//
// Sources, later ones winning: built-in defaults; the config file
// ($HPC_BATCH_CLIENT_CONFIG, else /etc/hpc-batch/client.conf, which may be
// absent); the environment (HPC_BATCH_BACKEND, HPC_BATCH_SLURM_BIN).
//
// The file holds `key = value` lines; `#` starts a comment. Keys:
//   backend   = local | slurm
//   slurm_bin = DIR      where sbatch, squeue, sacct, scancel, scontrol live
//                        (empty: looked up on PATH)
//   slurm_timeout = DURATION   how long one Slurm command may take (30s)
#ifndef HPCB_CLIENT_BACKEND_CONFIG_H_
#define HPCB_CLIENT_BACKEND_CONFIG_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/result.h"

namespace hpcb::client {

enum class BackendKind { kLocal, kSlurm };

inline constexpr const char* kDefaultClientConfig = "/etc/hpc-batch/client.conf";

struct BackendConfig {
  BackendKind backend = BackendKind::kLocal;
  std::string slurm_bin;
  std::chrono::milliseconds slurm_timeout{30'000};
  // How often attach and wait ask Slurm about a job. Not a file key: each
  // poll is an RPC to slurmctld, so users should not be able to lower it.
  std::chrono::milliseconds poll_interval{1'000};
};

// Applies the `key = value` lines of `text` to `config`; `origin` names the
// file in messages ("PATH:LINE: ...").
Result<void> ApplyClientConfig(std::string_view text, std::string_view origin,
                               BackendConfig* config);

// nullopt when the variable is unset.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
// Reads a whole file; a missing one is an Error with code kNotFound.
using FileReader = std::function<Result<std::string>(const std::string& path)>;

Result<BackendConfig> ResolveBackendConfig(const EnvLookup& env, const FileReader& read);

// ResolveBackendConfig against the process environment and filesystem.
Result<BackendConfig> LoadBackendConfig();

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_BACKEND_CONFIG_H_

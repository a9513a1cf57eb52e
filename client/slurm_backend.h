// dispatch's subcommands against a Slurm cluster: each runs Slurm's own
// commands (sbatch, squeue, sacct, scancel, scontrol) from
// BackendConfig::slurm_bin, renders what they say the way the local
// backend would, and returns the exit code. See docs/slurm-migration.md.
#ifndef HPCB_CLIENT_SLURM_BACKEND_H_
#define HPCB_CLIENT_SLURM_BACKEND_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "client/backend_config.h"
#include "client/dispatch.h"
#include "client/format.h"
#include "client/slurm_mapping.h"
#include "protocol/client_messages.h"

namespace hpcb::client::slurm {

// `request` as BuildSubmit made it; `command_env` the leading NAME=VALUE
// words alone (request.env also holds the forwarded environment, which
// sbatch --export=ALL forwards itself).
int Submit(const BackendConfig& config, const protocol::SubmitRequest& request,
           const std::map<std::string, std::string>& command_env, Io io);
int List(const BackendConfig& config, const protocol::ListRequest& request, bool json, Io io);
int Attach(const BackendConfig& config, std::uint64_t id, Io io);
int Kill(const BackendConfig& config, std::uint64_t id, Io io);
// `scontrol hold` / `scontrol release`, job by job, said as the local
// backend says it.
int Hold(const BackendConfig& config, const std::vector<std::uint64_t>& ids, bool hold, Io io);
int JobField(const BackendConfig& config, const protocol::JobFieldRequest& request, Io io);
// Waits for every job to end; exits with the first failing job's code
// (128 + signal for a signal), else 0.
int Wait(const BackendConfig& config, const std::vector<std::uint64_t>& ids, Io io);

// The `dispatch list` table for Slurm's jobs: the local columns, with
// "unlimited" for a job without a time limit and the reason a queued job
// waits.
Rendered RenderList(const std::vector<SlurmJob>& jobs, bool finished, double now);

}  // namespace hpcb::client::slurm

#endif  // HPCB_CLIENT_SLURM_BACKEND_H_

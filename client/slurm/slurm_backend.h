// dispatch's subcommands against a Slurm cluster: each runs Slurm's own
// commands (sbatch, squeue, sacct, scancel, scontrol) from
// BackendConfig::slurm_bin, renders what they say the way the local
// backend would, and returns the exit code. See docs/slurm-migration.md for
// what each subcommand becomes.
#ifndef HPCB_CLIENT_SLURM_SLURM_BACKEND_H_
#define HPCB_CLIENT_SLURM_SLURM_BACKEND_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/backend.h"
#include "client/backend_config.h"
#include "client/format.h"
#include "client/slurm/slurm_parse.h"
#include "protocol/client_messages.h"

namespace hpcb::client::slurm {

class SlurmBackend final : public Backend {
 public:
  explicit SlurmBackend(BackendConfig config);

  bool DaemonDeliversOutput() const override { return false; }
  // Slurm takes an element's ARRAY_INDEX itself (scancel, scontrol,
  // sbatch --dependency), and an array's id for all its elements.
  bool NamesElementsItself() const override { return true; }
  // sbatch gets `command_env` alone: request.env also holds the forwarded
  // environment, which sbatch --export=ALL forwards itself.
  int Submit(const protocol::SubmitRequest& request,
             const std::map<std::string, std::string>& command_env,
             const std::vector<TypedId>& after, bool wait, Io io) override;
  int List(const protocol::ListRequest& request, bool json, bool long_format, Io io) override;
  // `squeue --user=<you> --name=NAME --states=all`: finished jobs only
  // while slurmctld remembers them (MinJobAge).
  Result<std::vector<protocol::JobRow>> JobsNamed(const std::string& name) override;
  // None: Slurm takes an array's id and an element's A_I itself
  // (NamesElementsItself).
  Result<std::vector<protocol::JobRow>> JobsWithIds(
      const std::vector<std::uint64_t>& /*ids*/) override {
    return std::vector<protocol::JobRow>{};
  }
  int Attach(const TypedId& typed, Io io) override;
  int Kill(const TypedId& typed, Io io) override;
  // `scontrol hold` / `scontrol release`, job by job, said as the local
  // backend says it.
  int Hold(const std::vector<TypedId>& ids, bool hold, Io io) override;
  int JobField(const protocol::JobFieldRequest& request, bool json, Io io) override;
  // The local backend's wait loop (WaitForJobs) over JobRowOf: the same
  // lines and exit codes.
  // An element (12_3) is polled by its name (ElementRowOf).
  int Wait(const std::vector<TypedId>& ids, const WaitOptions& options, Io io) override;
  int Info(bool json, Io io) override;
  int Drain(bool on, Io io) override;
  int Output(const TypedId& typed, const std::optional<std::string>& to, Io io) override;

 private:
  // `new --wait` once job `id` is submitted: its output file (`path`;
  // empty with --no-output) to stdout as it grows, then Wait.
  int FollowThenWait(std::uint64_t id, const std::string& path, Io io);

  BackendConfig config_;
};

// The `dispatch list` table for Slurm's jobs: the local columns, with
// "unlimited" for a job without a time limit and the reason a queued job
// waits.
Rendered RenderList(const std::vector<SlurmJob>& jobs, bool finished, double now);

}  // namespace hpcb::client::slurm

#endif  // HPCB_CLIENT_SLURM_SLURM_BACKEND_H_

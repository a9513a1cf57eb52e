// Running Slurm's commands for the Slurm backend, and the few readings of
// their output that every subcommand shares. Errors are worded for the
// user: they name the command and what it said.
#ifndef HPCB_CLIENT_SLURM_SLURM_TOOLS_H_
#define HPCB_CLIENT_SLURM_SLURM_TOOLS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "client/backend_config.h"
#include "client/io.h"
#include "client/slurm/slurm_parse.h"
#include "common/base/result.h"
#include "common/subprocess.h"

namespace hpcb::client::slurm {

std::string IdText(std::uint64_t id);

// `text` without leading and trailing white space.
std::string Trimmed(std::string text);

// What a failed Slurm command said, for a message of ours.
std::string Complaint(const ProcessOutcome& outcome);

// As ReportError, but the line breaks in what Slurm's commands said are
// kept (each line's other control characters are still escaped).
int ReportSlurmError(const Error& error, Io io);

// Runs `tool` from config.slurm_bin (else PATH) with config.slurm_timeout;
// `input` is its standard input. A tool that cannot be found is an Error
// that says how to point dispatch at Slurm's commands.
Result<ProcessOutcome> RunTool(const BackendConfig& config, const std::string& tool,
                               std::vector<std::string> args, std::string input = {});

// Whether a Slurm command failed because slurmctld did not answer (down,
// restarting, or too busy): kUnavailable, which a wait rides out, as a
// command's timeout is (RunProcess).
bool SaysControllerUnreachable(const ProcessOutcome& outcome);

// Runs `tool` and insists on its success; `doing` starts the message.
Result<std::string> ToolOutput(const BackendConfig& config, const std::string& tool,
                               std::vector<std::string> args, const std::string& doing);

// The calling user as the password database has it (through getent).
Result<Submitter> CurrentUser(const BackendConfig& config);

// kNotFound, saying that Slurm does not know job `id` (as typed: 12, 12_3).
Error NoSuchJob(const std::string& id);

// `scontrol show job ID`, read into KEY -> VALUE; NoSuchJob when Slurm
// does not know the job. `id` as Slurm takes it: 12, or 12_3 for an
// array's element (whose record is the array's while it is pending).
Result<std::map<std::string, std::string>> ShowJob(const BackendConfig& config,
                                                   const std::string& id);

// Job `id` as slurmctld shows it (RowFromShowJob), else as sacct recorded
// it; NoSuchJob when neither knows it (without accounting, a job slurmctld
// forgot after MinJobAge is as unknown as one that never existed).
Result<protocol::JobRow> JobRowOf(const BackendConfig& config, std::uint64_t id);

// Element `index` of array `array` as JobRowOf gives a job, asked for by
// its name (12_3): a pending element has no job id of its own yet, and
// shows as its array's pending record.
Result<protocol::JobRow> ElementRowOf(const BackendConfig& config, std::uint64_t array,
                                      std::uint32_t index);

// Jobs `ids` as JobRowOf gives each, in one slurmctld request (`scontrol
// show job ID` for one job, `scontrol show job` for more); sacct only for
// those slurmctld no longer knows. NoSuchJob for one neither knows.
Result<std::map<std::uint64_t, protocol::JobRow>> JobRowsOf(const BackendConfig& config,
                                                            const std::set<std::uint64_t>& ids);

// sacct's arguments for reading jobs (ParseSacct), then `selection`.
std::vector<std::string> SacctArgs(std::vector<std::string> selection);

// Whether sacct failed because the cluster keeps no job accounting.
bool SaysNoAccounting(const ProcessOutcome& outcome);

// `job`'s value for `key` (ShowJob), empty when absent.
std::string Field(const std::map<std::string, std::string>& job, const char* key);

}  // namespace hpcb::client::slurm

#endif  // HPCB_CLIENT_SLURM_SLURM_TOOLS_H_

// The pure half of dispatch's Slurm backend: what `dispatch new` becomes
// for sbatch, and Slurm's words (durations, times, states, exit codes) in
// hpc-batch's. Reading whole squeue, sacct and scontrol output is
// slurm_parse.h's. Nothing here runs a program or reads a file.
#ifndef HPCB_CLIENT_SLURM_SLURM_MAPPING_H_
#define HPCB_CLIENT_SLURM_SLURM_MAPPING_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "protocol/client_messages.h"
#include "protocol/job_state.h"

namespace hpcb::client::slurm {

// The same clean PATH and LANG a local hpc-batch job starts with.
inline constexpr const char* kCleanPath = "/usr/local/bin:/usr/bin:/bin";
inline constexpr const char* kCleanLang = "C.UTF-8";

// Who submits: the job's HOME, USER, LOGNAME and SHELL, as hpc-batch sets
// them from the password database.
struct Submitter {
  std::string user;
  std::string home;
  std::string shell;  // empty: /bin/sh
};

struct SbatchJob {
  std::vector<std::string> args;  // sbatch's arguments, program name excluded
  std::string script;             // the batch script, fed on standard input
  // Where the output goes, as sbatch's --output pattern ("%j" the job id,
  // "%%" a '%'); empty with --no-output.
  std::string output_template;
  std::string error_template;  // the same for --error; empty without it
  // Said to the user on stderr (e.g. a time limit rounded up).
  std::vector<std::string> notes;
};

// `request` as parsed from `dispatch new` (its env is ignored);
// `command_env` holds the leading NAME=VALUE words of the command;
// `output_is_dir` says whether request.output names an existing directory;
// `after`: --after's ids as typed (12, or 12_3 for an element), which
// Slurm's dependencies take as they are; empty: request.after.
// Options Slurm cannot honour are refused here, with the reason.
Result<SbatchJob> MapSubmit(const protocol::SubmitRequest& request,
                            const std::map<std::string, std::string>& command_env,
                            const Submitter& who, bool output_is_dir,
                            const std::vector<std::string>& after = {});

// The submitter from the password-database entry of `uid` as `getent
// passwd` prints it: "name:password:uid:gid:gecos:home:shell".
Result<Submitter> ParsePasswdEntry(std::string_view line, std::uint32_t uid);

// The path `output_template` names for job `id`: "%j" (and an array's
// "%A") replaced by the id, an array's "%a" by "INDEX", "%%" by '%'.
std::string OutputPathFor(const std::string& output_template, std::uint64_t id);

// The job id printed by `sbatch --parsable` ("ID" or "ID;CLUSTER").
Result<std::uint64_t> ParseSbatchId(std::string_view text);

// Slurm's durations: "MM:SS", "HH:MM:SS", "D-HH[:MM[:SS]]" or plain
// minutes. nullopt for "UNLIMITED", "INFINITE", "Partition_Limit", "N/A"
// and the like (no limit of the job's own); an Error for anything else.
Result<std::optional<std::int64_t>> ParseSlurmDuration(std::string_view text);

// Whole minutes, rounded up, as sbatch --time and scontrol TimeLimit take.
std::int64_t MinutesRoundedUp(std::int64_t seconds);

// "2024-05-01T10:00:00" in local time, as Slurm prints it; nullopt for
// "N/A", "Unknown", "None" and anything unparsable.
std::optional<double> ParseSlurmTimestamp(std::string_view text);

// A Slurm job state ("RUNNING", "CANCELLED by 0", "CANCELLED+") in
// hpc-batch's words.
struct StateView {
  protocol::JobState state = protocol::JobState::kQueued;
  std::optional<protocol::JobReason> reason;  // done only
};
StateView MapJobState(std::string_view slurm_state);
bool IsTerminalState(std::string_view slurm_state);

// Exit codes as hpc-batch keeps them: the status, or minus the signal.
// `raw` is a wait(2) status (squeue's exit_code); `pair` is "CODE:SIGNAL"
// (sacct's and scontrol's ExitCode).
std::optional<std::int64_t> ExitFromWaitStatus(std::string_view raw);
std::optional<std::int64_t> ExitFromPair(std::string_view pair);

// Splits what ShellJoin (format.h) joined; nullopt when the quotes do not
// balance.
std::optional<std::vector<std::string>> ShellSplit(std::string_view text);

// The name sbatch gets without --name: the command line, control
// characters made '?' so that one job is one line of squeue's output.
std::string JobNameFor(const std::vector<std::string>& argv);

// A job submitted with --name gets it as its Slurm name (-J), and its
// command line (JobNameFor) goes to its comment after this prefix, where
// list reads it back (slurm_parse.h). Any other job's command line is its
// name.
inline constexpr std::string_view kCommandComment = "dispatch command: ";

// Between the fields asked of squeue and sacct: a byte no path or command
// line dispatch submits holds (job names are cleaned by JobNameFor).
inline constexpr char kFieldSeparator = '\x1f';

}  // namespace hpcb::client::slurm

#endif  // HPCB_CLIENT_SLURM_SLURM_MAPPING_H_

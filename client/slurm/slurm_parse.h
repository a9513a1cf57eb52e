// Reading what squeue, sacct and scontrol print into hpc-batch's JobRow
// and into KEY -> VALUE records. Nothing here runs a program or reads a
// file.
#ifndef HPCB_CLIENT_SLURM_SLURM_PARSE_H_
#define HPCB_CLIENT_SLURM_SLURM_PARSE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/slurm/slurm_mapping.h"
#include "protocol/client_messages.h"

namespace hpcb::client::slurm {

// `text` cut at each `separator`; empty parts are kept.
std::vector<std::string> SplitOn(std::string_view text, char separator);

// One job as squeue or sacct shows it.
struct SlurmJob {
  protocol::JobRow row;
  std::string pending_reason;  // squeue's Reason for a queued job, else empty
};

// squeue's -O list (each field but the last, the job name, followed by a
// 0x1f separator) and its parse; lines that are not jobs are skipped.
std::string SqueueFormat();
std::vector<SlurmJob> ParseSqueue(std::string_view text);

// sacct's --format list (used with --parsable2 --delimiter=kFieldSeparator)
// and its parse.
std::string SacctFormat();
std::vector<SlurmJob> ParseSacct(std::string_view text);

// Job `id` as `scontrol show job` shows it (ParseScontrolRecord): its state,
// owner and time limit; for a job that ended, how (a job cancelled before
// it got a node has no start time and no exit code: it did not run).
protocol::JobRow RowFromShowJob(std::uint64_t id, const std::map<std::string, std::string>& job);

// Whether the job `scontrol show job` shows (ParseScontrolRecord) was ever
// given a node. Trap: slurmctld sets StartTime when it cancels a pending
// job too; only a job given a node ever started.
bool GotANode(const std::map<std::string, std::string>& job);

// One record of `scontrol show job` (multi-line form) or `show node` as
// KEY -> VALUE. Values may hold spaces for the keys Slurm prints on a line
// of their own (StdOut, WorkDir, Command, ...).
std::map<std::string, std::string> ParseScontrolRecord(std::string_view text);

// The records of `scontrol show job` (or `show node`) for several: each
// starts on a line that does not start with a space.
std::vector<std::string_view> SplitScontrolRecords(std::string_view text);

// A job's output file from Slurm's pattern for it: %%, %j, %A, %u, %x and
// the batch step's %n, %t, %s are filled in; nullopt when the pattern needs
// what only the node knows (%N, %a, ...) or holds a backslash (which
// turns replacements off in a way not worth guessing at).
std::optional<std::string> ExpandOutputPattern(std::string_view pattern, std::uint64_t id,
                                               std::string_view user, std::string_view name);

}  // namespace hpcb::client::slurm

#endif  // HPCB_CLIENT_SLURM_SLURM_PARSE_H_

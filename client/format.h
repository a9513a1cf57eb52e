// Pure text rendering for `dispatch`: tables, times, list cells and the
// one-line replies of each subcommand.
#ifndef HPCB_CLIENT_FORMAT_H_
#define HPCB_CLIENT_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/client_messages.h"

namespace hpcb::client {

// Python shlex.quote / shlex.join.
std::string ShellQuote(std::string_view word);
// For a terminal: ShellQuote, except that a word with control characters
// is spelled bash's $'...' way, so none of them reaches the terminal.
std::string QuoteForDisplay(std::string_view word);
std::string JoinForDisplay(const std::vector<std::string>& argv);
// `text` with every control character spelled as an escape (\n, \e,
// \x07...), for anything a user chose that is printed to a terminal.
std::string EscapeControl(std::string_view text);
std::string ShellJoin(const std::vector<std::string>& argv);

// Columns padded to their widest cell, joined by two spaces, trailing
// whitespace stripped; one line per row, each ending in '\n'.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);
// The header row of `list`, whichever backend fills the rows. NAME, like
// GPU, is there only when a row has one, so a list of jobs without names
// reads as the original tool's.
std::vector<std::string> ListHeader(bool show_name, bool show_gpu, bool finished,
                                    bool usage_columns);
// NAME: the job's --name, "-" for none.
std::string NameCell(const protocol::JobRow& row);

// Local time: "HH:MM:SS" when on the same calendar day as `now`, else
// "YYYY-MM-DD HH:MM"; "-" when absent.
std::string FormatStartTime(std::optional<double> start, double now);

std::string UptimeCell(const protocol::JobRow& row);
// START: the start time, or "after 3,4" / "after-any 3" for a queued job
// with dependencies.
std::string StartCell(const protocol::JobRow& row, double now);
std::string MemCell(const protocol::JobRow& row);
std::string GpuCell(const protocol::JobRow& row);
std::string ExitCell(const protocol::JobRow& row);
// Seconds as a stopwatch shows them: "0.42s", "12.3s", "2m05s", "1h02m03s".
std::string FormatSeconds(double seconds);
// A peak in GiB, like the memory budgets ("0.21G", "3.5G"); "-" if unknown.
std::string FormatPeak(std::optional<std::uint64_t> bytes);
// WALL, CPU-TIME, CPUS-USED, PEAK-MEM of a finished job; dashes otherwise.
std::vector<std::string> UsageCells(const protocol::JobRow& row);
// True for the worst-link labels that earn a '!'.
bool IsSlowLink(std::string_view label);

struct Rendered {
  std::string out;
  std::string err;
};

// The whole `dispatch list` output (table, footnotes, stderr notes).
// `usage_columns` (list --long): what finished jobs used: WALL (start to
// end), CPU-TIME (user + system, every thread), CPUS-USED (their ratio)
// and PEAK-MEM; "-" for jobs still queued or running.
Rendered RenderList(const protocol::ListReply& reply, bool finished, bool usage_columns = false);

// `job 3 running (2 cpu, max time 1h, memory 4G (default))` and, unless
// `no_output`, `output will be saved to DEST`, then, given `error_dest`
// (--error), `stderr will be saved to DEST`. Lines end in '\n'.
std::string RenderSubmit(const protocol::SubmitReply& reply, bool no_output,
                         const std::optional<std::string>& requested_output,
                         const std::optional<std::string>& error_dest = std::nullopt);

// What attach says on stderr before streaming; empty for a running job.
std::string RenderAttachNotice(std::uint64_t id, const protocol::AttachReply& reply);

std::string RenderKill(std::uint64_t id, const protocol::KillReply& reply);
// "job N held", "job N released", or that nothing changed.
// `id` as typed (12, or 12_3 for Slurm's element).
std::string RenderHold(const std::string& id, const protocol::HoldReply& reply);

std::string RenderJobField(std::uint64_t id, std::string_view field, std::string_view action,
                           const protocol::JobFieldReply& reply);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_FORMAT_H_

#include "client/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>

#include "client/array_rows.h"
#include "common/units.h"

namespace hpcb::client {
namespace {

bool IsSafeShellChar(char c) {
  if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
    return true;
  }
  return std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
}

std::optional<std::int64_t> WholeSeconds(std::optional<double> seconds) {
  if (!seconds || !std::isfinite(*seconds)) return std::nullopt;
  if (*seconds < 0) return 0;
  if (*seconds > 9.2e18) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(*seconds);
}

// Literal formats only (-Wformat-nonliteral).
std::string ClockTime(const std::tm& tm) {
  char buffer[64];
  std::size_t n = std::strftime(buffer, sizeof buffer, "%H:%M:%S", &tm);
  return std::string(buffer, n);
}

std::string DateAndMinute(const std::tm& tm) {
  char buffer[64];
  std::size_t n = std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M", &tm);
  return std::string(buffer, n);
}

bool LocalTime(double epoch, std::tm* tm) {
  if (!std::isfinite(epoch)) return false;
  auto seconds = static_cast<std::time_t>(std::floor(epoch));
  return localtime_r(&seconds, tm) != nullptr;
}

constexpr const char* kSpanNote =
    "+ memory spans NUMA nodes; the remote part is slower to access. Use "
    "--numa-local-mem to wait for a node that fits instead.";
constexpr const char* kLinkNote =
    "! these gpus reach each other across a host bridge or the socket "
    "interconnect, so peer-to-peer copies are slower. Use --gpu-link to wait "
    "for closer ones instead.";

}  // namespace

namespace {

bool IsControl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

// A control character as a C-style escape: \n, \t, \r, \e or \xNN.
std::string EscapeOne(char c) {
  switch (c) {
    case '\n':
      return "\\n";
    case '\t':
      return "\\t";
    case '\r':
      return "\\r";
    case '\x1b':
      return "\\e";
    default: {
      char hex[8];
      (void)std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(c));
      return hex;
    }
  }
}

}  // namespace

std::string EscapeControl(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (IsControl(c)) {
      out += EscapeOne(c);
    } else {
      out += c;
    }
  }
  return out;
}

std::string ShellQuote(std::string_view word) {
  if (word.empty()) return "''";
  bool safe = true;
  for (char c : word)
    safe = safe && IsSafeShellChar(c);
  if (safe) return std::string(word);
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\"'\"'";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string QuoteForDisplay(std::string_view word) {
  // A word with control characters would write them to the terminal (an
  // escape sequence in another user's argv, say): bash's $'...' spells them.
  // Not for scripts: /bin/sh may not read $'...'.
  if (!std::any_of(word.begin(), word.end(), IsControl)) return ShellQuote(word);
  std::string quoted = "$'";
  for (char c : word) {
    if (c == '\\' || c == '\'') {
      quoted += '\\';
      quoted += c;
    } else if (IsControl(c)) {
      quoted += EscapeOne(c);
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string JoinForDisplay(const std::vector<std::string>& argv) {
  std::string joined;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) joined += ' ';
    joined += QuoteForDisplay(argv[i]);
  }
  return joined;
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string joined;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) joined += ' ';
    joined += ShellQuote(argv[i]);
  }
  return joined;
}

std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string text;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i > 0) line += "  ";
      line += row[i];
      line.append(widths[i] - row[i].size(), ' ');
    }
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t'))
      line.pop_back();
    text += line + '\n';
  }
  return text;
}

std::string FormatStartTime(std::optional<double> start, double now) {
  std::tm start_tm{};
  std::tm now_tm{};
  if (!start || !LocalTime(*start, &start_tm)) return "-";
  if (LocalTime(now, &now_tm) && start_tm.tm_year == now_tm.tm_year &&
      start_tm.tm_yday == now_tm.tm_yday) {
    return ClockTime(start_tm);
  }
  return DateAndMinute(start_tm);
}

std::string UptimeCell(const protocol::JobRow& row) {
  if (row.state == protocol::JobState::kQueued) return row.held ? "held" : "queued";
  if (!row.start_time) return "-";
  return FormatDuration(WholeSeconds(row.uptime_s));
}

std::string MemCell(const protocol::JobRow& row) {
  std::string cell = FormatGiB(row.max_mem_gb);
  if (row.max_mem_gb && row.mem_spans_nodes) cell += '+';
  return cell;
}

bool IsSlowLink(std::string_view label) {
  return label == "PHB" || label == "NODE" || label == "SYS";
}

std::string GpuCell(const protocol::JobRow& row) {
  if (row.gpus <= 0) return "-";
  std::string cell = std::to_string(row.gpus);
  if (!row.gpu_link || row.gpu_link->empty()) return cell;
  cell += ' ' + *row.gpu_link;
  if (IsSlowLink(*row.gpu_link)) cell += '!';
  return cell;
}

std::string ExitCell(const protocol::JobRow& row) {
  if (row.state != protocol::JobState::kDone) return "-";
  if (row.reason) return std::string(protocol::NameOf(*row.reason));
  if (row.exit_code) return std::to_string(*row.exit_code);
  return "-";
}

// Seconds as people read a stopwatch: "0.42s", "12.3s", "2m05s", "1h02m03s".
std::string FormatSeconds(double seconds) {
  char buffer[64];
  if (!(seconds >= 0)) return "-";
  if (seconds < 10) {
    (void)std::snprintf(buffer, sizeof buffer, "%.2fs", seconds);
  } else if (seconds < 60) {
    (void)std::snprintf(buffer, sizeof buffer, "%.1fs", seconds);
  } else {
    const auto whole = static_cast<std::int64_t>(std::lround(seconds));
    const std::int64_t h = whole / 3600, m = whole / 60 % 60, sec = whole % 60;
    if (h > 0) {
      (void)std::snprintf(buffer, sizeof buffer, "%lldh%02lldm%02llds", static_cast<long long>(h),
                          static_cast<long long>(m), static_cast<long long>(sec));
    } else {
      (void)std::snprintf(buffer, sizeof buffer, "%lldm%02llds", static_cast<long long>(m),
                          static_cast<long long>(sec));
    }
  }
  return buffer;
}

// Bytes in GiB like the budgets, to two significant places below 1 GiB.
std::string FormatPeak(std::optional<std::uint64_t> bytes) {
  if (!bytes) return "-";
  const double gib = static_cast<double>(*bytes) / (1024.0 * 1024 * 1024);
  char buffer[64];
  (void)std::snprintf(buffer, sizeof buffer, gib < 1 ? "%.2gG" : "%.3gG", gib);
  return buffer;
}

std::vector<std::string> UsageCells(const protocol::JobRow& row) {
  if (!row.usage) return {"-", "-", "-", "-"};
  const protocol::JobUsage& usage = *row.usage;
  const double cpu_s = usage.user_s + usage.system_s;
  std::string load = "-";
  if (usage.wall_s > 0.01) {
    char buffer[32];
    (void)std::snprintf(buffer, sizeof buffer, "%.2f", cpu_s / usage.wall_s);
    load = buffer;
  }
  return {FormatSeconds(usage.wall_s), FormatSeconds(cpu_s), load,
          FormatPeak(usage.peak_memory_bytes)};
}

std::string StartCell(const protocol::JobRow& row, double now) {
  if (row.state != protocol::JobState::kQueued || row.after.empty()) {
    return FormatStartTime(row.start_time, now);
  }
  std::string ids;
  for (std::uint64_t id : row.after)
    ids += (ids.empty() ? "" : ",") + std::to_string(id);
  return (row.after_any ? "after-any " : "after ") + ids;
}

std::vector<std::string> ListHeader(bool show_name, bool show_gpu, bool finished,
                                    bool usage_columns) {
  std::vector<std::string> header = {"USER", "ID"};
  if (show_name) header.emplace_back("NAME");
  for (const char* name : {"COMMAND", "START", "UPTIME", "MAX-TIME", "MEM"})
    header.emplace_back(name);
  if (show_gpu) header.push_back("GPU");
  header.push_back("EXCLUSIVE");
  if (finished) {
    header.push_back("STATE");
    header.push_back("EXIT");
  }
  if (usage_columns) {
    for (const char* name : {"WALL", "CPU-TIME", "CPUS-USED", "PEAK-MEM"})
      header.push_back(name);
  }
  return header;
}

std::string NameCell(const protocol::JobRow& row) {
  return row.name ? EscapeControl(*row.name) : "-";
}

Rendered RenderList(const protocol::ListReply& reply, bool finished, bool usage_columns) {
  Rendered rendered;
  const std::string drain_note =
      reply.draining ? "\ndraining: queued jobs are not started until an admin runs "
                       "`dispatch resume`\n"
                     : "";
  if (reply.jobs.empty()) {
    rendered.out = "no jobs\n" + drain_note;
    return rendered;
  }
  bool show_gpu = false;
  bool show_name = false;
  for (const auto& row : reply.jobs) {
    show_gpu = show_gpu || row.gpus > 0;
    show_name = show_name || row.name.has_value();
  }
  std::vector<std::vector<std::string>> table = {
      ListHeader(show_name, show_gpu, finished, usage_columns)};
  bool any_span = false;
  bool any_slow = false;
  // --long shows each element of an array; without, an array is one line.
  for (const ListLine& line : ListLines(reply.jobs, /*fold=*/!usage_columns)) {
    const protocol::JobRow& row = *line.row;
    std::vector<std::string> cells = {row.user,
                                      line.id,
                                      JoinForDisplay(row.argv),
                                      StartCell(row, reply.now),
                                      line.summary.value_or(UptimeCell(row)),
                                      FormatDuration(row.max_time_s),
                                      MemCell(row)};
    if (show_name) cells.insert(cells.begin() + 2, NameCell(row));
    if (show_gpu) cells.push_back(GpuCell(row));
    cells.push_back(row.exclusive ? "yes" : "no");
    if (finished) {
      cells.push_back(line.summary ? "array" : std::string(protocol::NameOf(row.state)));
      cells.push_back(line.summary ? "-" : ExitCell(row));
    }
    if (usage_columns) {
      for (std::string& cell : UsageCells(row))
        cells.push_back(std::move(cell));
    }
    any_span = any_span || (row.max_mem_gb && row.mem_spans_nodes);
    any_slow = any_slow || (row.gpus > 0 && row.gpu_link && IsSlowLink(*row.gpu_link));
    table.push_back(std::move(cells));
  }
  rendered.out = FormatTable(table);
  if (any_span) rendered.out += std::string("\n") + kSpanNote + "\n";
  if (any_slow) rendered.out += std::string("\n") + kLinkNote + "\n";
  rendered.out += drain_note;
  for (const auto& row : reply.jobs) {
    std::string prefix = "job " + JobIdText(row) + ": ";
    if (row.reason == protocol::JobReason::kOom) {
      rendered.err += prefix + "killed for exceeding its " + FormatGiB(row.max_mem_gb) +
                      " memory budget (" +
                      (row.mem_defaulted ? "assigned by default" : "requested") +
                      "); pass --max-mem to raise it\n";
    }
    if (row.detail) rendered.err += prefix + EscapeControl(*row.detail) + "\n";
    if (row.output_error) {
      // Only --error's file failed: the error names it.
      const bool only_stderr = protocol::StdoutDelivered(row.output_error);
      rendered.err +=
          prefix + "could not save " +
          (only_stderr ? "" : "output to " + EscapeControl(row.output_dest.value_or("-")) + ": ") +
          EscapeControl(*row.output_error) + "\n";
    }
  }
  return rendered;
}

std::string RenderSubmit(const protocol::SubmitReply& reply, bool no_output,
                         const std::optional<std::string>& requested_output,
                         const std::optional<std::string>& error_dest) {
  // Without SMT (or under --cpu-unit thread) a cpu is a core and the line
  // reads as it always did.
  std::string cpus = std::to_string(reply.cpu) + " cpu";
  if (reply.granted_cores > 0 && reply.granted_cores != reply.granted_cpus) {
    cpus = std::to_string(reply.granted_cpus) + " cpus = " + std::to_string(reply.granted_cores) +
           (reply.granted_cores == 1 ? " core" : " cores");
  }
  std::string text = "job " + std::to_string(reply.id) + " " +
                     std::string(protocol::NameOf(reply.state)) + " (" + cpus + ", max time " +
                     FormatDuration(reply.max_time_s);
  if (reply.array_elements > 0) {
    // Each element is its own job, with these resources.
    text = "array " + std::to_string(reply.id) + " of " + std::to_string(reply.array_elements) +
           " jobs " + std::to_string(reply.id) + "_INDEX " +
           std::string(protocol::NameOf(reply.state)) + " (each " + cpus + ", max time " +
           FormatDuration(reply.max_time_s);
  }
  if (reply.max_mem_gb) {
    text += ", memory " + FormatGiB(reply.max_mem_gb);
    if (reply.mem_defaulted) text += " (default)";
  }
  text += ")\n";
  if (!no_output) {
    std::string dest = EscapeControl(reply.output_dest.value_or(requested_output.value_or("-")));
    const std::string array_log = "/output." + std::to_string(reply.id) + ".log";
    if (reply.array_elements > 0 && dest.ends_with(array_log)) {
      dest.replace(dest.size() - 4, 4, "_INDEX.log");
    }
    text += "output will be saved to " + dest + "\n";
  }
  if (error_dest) text += "stderr will be saved to " + EscapeControl(*error_dest) + "\n";
  return text;
}

std::string RenderAttachNotice(std::uint64_t id, const protocol::AttachReply& reply) {
  std::string job = "job " + std::to_string(id);
  if (reply.state == protocol::JobState::kQueued)
    return job + " is queued; waiting for it to start...\n";
  if (reply.state == protocol::JobState::kDone) {
    if (reply.output_dest && !protocol::StdoutDelivered(reply.output_error)) {
      return job + " has finished; its output could not be saved to " +
             EscapeControl(*reply.output_dest) + " (" + EscapeControl(*reply.output_error) +
             "), so here is the copy kept for it:\n";
    }
    if (reply.output_dest) {
      return job + " has finished; its output is at " + EscapeControl(*reply.output_dest) + "\n";
    }
    return job + " has finished; it ran with --no-output, so nothing was kept\n";
  }
  return "";
}

std::string RenderKill(std::uint64_t id, const protocol::KillReply& reply) {
  if (reply.state == protocol::KillOutcome::kRemoved)
    return "job " + std::to_string(id) + " removed from the queue\n";
  return "job " + std::to_string(id) + ": kill signal sent\n";
}

std::string RenderHold(const std::string& id, const protocol::HoldReply& reply) {
  const std::string job = "job " + id;
  if (reply.held) return job + (reply.changed ? " held\n" : " was already held\n");
  return job + (reply.changed ? " released\n" : " was not held\n");
}

std::string RenderJobField(std::uint64_t id, std::string_view field, std::string_view action,
                           const protocol::JobFieldReply& reply) {
  std::string text = "job " + std::to_string(id) + " " + std::string(field) + " ";
  if (action == "get" || !reply.before) return text + FormatDuration(reply.value) + "\n";
  return text + FormatDuration(*reply.before) + " -> " + FormatDuration(reply.value) + "\n";
}

}  // namespace hpcb::client

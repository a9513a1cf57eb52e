#include "client/slurm/slurm_parse.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "client/format.h"
#include "common/units.h"
#include "protocol/array_spec.h"

namespace hpcb::client::slurm {
namespace {

// Records of `fields` fields separated by 0x1f, one a line; the last field
// (the job name) takes any extra separators, and a line that is too short
// continues the previous record's last field (a name with a newline in it,
// from a job dispatch did not submit).
std::vector<std::vector<std::string>> SplitRecords(std::string_view text, std::size_t fields) {
  std::vector<std::vector<std::string>> records;
  for (const std::string& line : SplitOn(text, '\n')) {
    std::vector<std::string> parts = SplitOn(line, kFieldSeparator);
    if (parts.size() >= fields) {
      std::string last = parts[fields - 1];
      for (std::size_t i = fields; i < parts.size(); ++i)
        last += kFieldSeparator + parts[i];
      parts.resize(fields);
      parts[fields - 1] = last;
      records.push_back(std::move(parts));
    } else if (!records.empty() && !line.empty()) {
      records.back().back() += "\n" + line;
    }
  }
  return records;
}

std::optional<std::uint64_t> LeadingId(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  auto id = ParseInteger(text.substr(0, digits), 1, std::int64_t{1} << 62);
  if (!id) return std::nullopt;
  return static_cast<std::uint64_t>(*id);
}

std::optional<std::int64_t> SmallInteger(std::string_view text) {
  auto value = ParseInteger(text, 0, std::int64_t{1} << 40);
  if (!value) return std::nullopt;
  return *value;
}

// squeue's MinMemory and sacct's ReqMem: "4G", "100M", "0"; sacct may add
// 'n' (per node) or 'c' (per CPU).
std::optional<double> MemoryGiB(std::string text, std::int64_t cpus) {
  bool per_cpu = false;
  if (!text.empty() && (text.back() == 'n' || text.back() == 'c')) {
    per_cpu = text.back() == 'c';
    text.pop_back();
  }
  auto gib = ParseMemoryGiB(text);
  if (!gib || !(*gib > 0)) return std::nullopt;
  return per_cpu ? *gib * static_cast<double>(std::max<std::int64_t>(cpus, 1)) : *gib;
}

// squeue's tres-per-node ("gres:gpu:2", "gres/gpu:a100:2", "N/A") and
// sacct's AllocTRES ("cpu=2,gres/gpu=2,mem=4G,node=1").
std::int64_t GpuCount(std::string_view text) {
  for (const std::string& entry : SplitOn(text, ',')) {
    std::size_t at = entry.find("gpu");
    if (at == std::string::npos || (at > 0 && entry[at - 1] != ':' && entry[at - 1] != '/')) {
      continue;
    }
    std::size_t eq = entry.find('=');
    if (eq != std::string::npos) {
      if (entry.compare(0, 9, "gres/gpu=") != 0) continue;  // typed: counted in the total
      return SmallInteger(entry.substr(eq + 1)).value_or(0);
    }
    std::size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon < at) return 1;
    return SmallInteger(entry.substr(colon + 1)).value_or(1);
  }
  return 0;
}

// Whether a NodeList (scontrol's or sacct's) names a node: scontrol says
// "(null)" and sacct "None assigned" for a job that never got one.
bool PlacedOn(std::string_view nodes) {
  return !nodes.empty() && nodes != "(null)" && nodes != "None assigned";
}

// A job Slurm cancelled because its --after could never be met
// (--kill-on-invalid-dep) did not run for that reason; `dependency` is
// scontrol's Dependency, empty where only sacct knows the job.
void MarkFailedDependency(std::string_view reason, const std::string& dependency,
                          protocol::JobRow* row) {
  if (row->reason != protocol::JobReason::kKilled || reason != "DependencyNeverSatisfied") return;
  row->reason = protocol::JobReason::kDependency;
  row->detail = dependency.empty() || dependency == "(null)"
                    ? "a job it waited for did not end as --after requires, so it did not run"
                    : "its dependency " + dependency + " can never be met, so it did not run";
}

}  // namespace

std::vector<std::string> SplitOn(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t at = text.find(separator, start);
    if (at == std::string_view::npos) {
      parts.emplace_back(text.substr(start));
      return parts;
    }
    parts.emplace_back(text.substr(start, at - start));
    start = at + 1;
  }
}

bool GotANode(const std::map<std::string, std::string>& job) {
  auto it = job.find("NodeList");
  return it != job.end() && PlacedOn(it->second);
}

protocol::JobRow RowFromShowJob(std::uint64_t id, const std::map<std::string, std::string>& job) {
  auto field = [&job](const char* key) {
    auto it = job.find(key);
    return it == job.end() ? std::string() : it->second;
  };
  protocol::JobRow row;
  row.id = id;
  const std::string user = field("UserId");
  row.user = user.substr(0, user.find('('));
  StateView view = MapJobState(field("JobState"));
  row.state = view.state;
  row.reason = view.reason;
  if (row.state != protocol::JobState::kQueued && GotANode(job)) {
    row.start_time = ParseSlurmTimestamp(field("StartTime"));
    if (row.state == protocol::JobState::kDone) row.exit_code = ExitFromPair(field("ExitCode"));
  }
  MarkFailedDependency(field("Reason"), field("Dependency"), &row);
  auto limit = ParseSlurmDuration(field("TimeLimit"));
  row.max_time_s = (limit && limit->has_value()) ? **limit : 0;
  row.held = row.state == protocol::JobState::kQueued &&
             (field("Reason") == "JobHeldUser" || field("Reason") == "JobHeldAdmin");
  return row;
}

namespace {

// The order of SqueueFormat()'s fields.
enum SqueueField {
  kSqId,
  kSqUser,
  kSqState,
  kSqReason,
  kSqStart,
  kSqUsed,
  kSqLimit,
  kSqCpus,
  kSqMem,
  kSqGres,
  kSqShare,
  kSqExit,
  kSqStdout,
  kSqComment,
  kSqName,
  kSqFieldCount
};

// JobArrayID: a plain job's id, an array element's ARRAY_INDEX, its
// pending elements' ARRAY_[4-100%8] (JobID would give each its own id).
constexpr const char* kSqueueFields[] = {
    "JobArrayID",    "UserName",  "State",   "Reason",    "StartTime",
    "TimeUsed",      "TimeLimit", "NumCPUs", "MinMemory", "tres-per-node",
    "OverSubscribe", "exit_code", "STDOUT",  "Comment",   "Name"};

enum SacctField {
  kSaId,
  kSaUser,
  kSaState,
  kSaStart,
  kSaElapsed,
  kSaLimit,
  kSaCpus,
  kSaMem,
  kSaTres,
  kSaExit,
  kSaNodes,
  kSaReason,
  kSaComment,
  kSaName,
  kSaFieldCount
};

constexpr const char* kSacctFields[] = {
    "JobID",  "User",      "State",    "Start",    "Elapsed", "Timelimit", "AllocCPUS",
    "ReqMem", "AllocTRES", "ExitCode", "NodeList", "Reason",  "Comment",   "JobName"};

std::vector<std::string> ArgvFromName(const std::string& name) {
  auto words = ShellSplit(name);
  if (words && !words->empty()) return *words;
  return {name};
}

// A job dispatch submitted with --name carries its command line in its
// comment (MapSubmit); any other job's command line is its Slurm name.
// Trap: sacct shows comments only where accounting stores them
// (AccountingStoreFlags=job_comment); elsewhere a finished named job reads
// as an unnamed one whose command is its name.
void ReadNameAndArgv(const std::string& name, const std::string& comment, protocol::JobRow* row) {
  if (comment.rfind(kCommandComment, 0) == 0) {
    row->name = name;
    row->argv = ArgvFromName(comment.substr(kCommandComment.size()));
  } else {
    row->argv = ArgvFromName(name);
  }
}

// Slurm names an array's element ARRAY_INDEX, and its pending elements
// together ARRAY_[4-100%8]: both are rows of array ARRAY (array_rows.h).
void ReadArrayId(std::string_view text, protocol::JobRow* row) {
  const std::size_t underscore = text.find('_');
  if (underscore == std::string_view::npos) return;
  row->array_id = row->id;
  std::string_view index = text.substr(underscore + 1);
  index = index.substr(0, index.find('.'));  // a step's JobID: 12_3.batch
  if (auto value = ParseInteger(index, 0, protocol::kMaxArrayIndex)) {
    row->array_index = static_cast<std::uint32_t>(*value);
  }
}

std::optional<double> Seconds(std::string_view text) {
  auto seconds = ParseSlurmDuration(text);
  if (!seconds || !seconds->has_value()) return std::nullopt;
  return static_cast<double>(**seconds);
}

}  // namespace

std::string SqueueFormat() {
  static_assert(std::size(kSqueueFields) == kSqFieldCount);
  std::string format;
  for (std::size_t i = 0; i < std::size(kSqueueFields); ++i) {
    if (i > 0) format += ',';
    // ":0" is "no width": squeue neither pads nor cuts the value.
    format += std::string(kSqueueFields[i]) + ":0";
    if (i + 1 < std::size(kSqueueFields)) format += kFieldSeparator;
  }
  return format;
}

std::vector<SlurmJob> ParseSqueue(std::string_view text) {
  std::vector<SlurmJob> rows;
  for (const auto& f : SplitRecords(text, kSqFieldCount)) {
    auto id = LeadingId(f[kSqId]);
    if (!id) continue;
    protocol::JobRow row;
    row.id = *id;
    ReadArrayId(f[kSqId], &row);
    row.user = f[kSqUser];
    StateView view = MapJobState(f[kSqState]);
    row.state = view.state;
    row.reason = view.reason;
    if (row.state != protocol::JobState::kQueued) {
      row.start_time = ParseSlurmTimestamp(f[kSqStart]);
      if (row.start_time) row.uptime_s = Seconds(f[kSqUsed]);
    }
    auto limit = ParseSlurmDuration(f[kSqLimit]);
    row.max_time_s = (limit && limit->has_value()) ? **limit : 0;
    row.cpu = SmallInteger(f[kSqCpus]).value_or(0);
    row.max_mem_gb = MemoryGiB(f[kSqMem], row.cpu);
    row.gpus = GpuCount(f[kSqGres]);
    row.exclusive = f[kSqShare] == "NO";
    if (row.state == protocol::JobState::kDone && !row.reason)
      row.exit_code = ExitFromWaitStatus(f[kSqExit]);
    if (f[kSqStdout] != "/dev/null") {
      row.output_dest = ExpandOutputPattern(f[kSqStdout], row.id, row.user, f[kSqName]);
    }
    ReadNameAndArgv(f[kSqName], f[kSqComment], &row);
    row.held = row.state == protocol::JobState::kQueued &&
               (f[kSqReason] == "JobHeldUser" || f[kSqReason] == "JobHeldAdmin");
    std::string pending =
        row.state == protocol::JobState::kQueued && f[kSqReason] != "None" ? f[kSqReason] : "";
    rows.push_back({std::move(row), std::move(pending)});
  }
  return rows;
}

std::string SacctFormat() {
  static_assert(std::size(kSacctFields) == kSaFieldCount);
  std::string format;
  for (std::size_t i = 0; i < std::size(kSacctFields); ++i) {
    if (i > 0) format += ',';
    format += kSacctFields[i];
  }
  return format;
}

std::vector<SlurmJob> ParseSacct(std::string_view text) {
  std::vector<SlurmJob> rows;
  for (const auto& f : SplitRecords(text, kSaFieldCount)) {
    auto id = LeadingId(f[kSaId]);
    if (!id) continue;
    protocol::JobRow row;
    row.id = *id;
    ReadArrayId(f[kSaId], &row);
    row.user = f[kSaUser];
    StateView view = MapJobState(f[kSaState]);
    row.state = view.state;
    row.reason = view.reason;
    // Trap: sacct's Start of a job cancelled while queued is when it was
    // cancelled; only one given a node ran (GotANode).
    const bool placed = PlacedOn(f[kSaNodes]);
    if (row.state != protocol::JobState::kQueued && placed) {
      row.start_time = ParseSlurmTimestamp(f[kSaStart]);
      if (row.start_time) row.uptime_s = Seconds(f[kSaElapsed]);
    }
    auto limit = ParseSlurmDuration(f[kSaLimit]);
    row.max_time_s = (limit && limit->has_value()) ? **limit : 0;
    row.cpu = SmallInteger(f[kSaCpus]).value_or(0);
    row.max_mem_gb = MemoryGiB(f[kSaMem], row.cpu);
    row.gpus = GpuCount(f[kSaTres]);
    if (row.state == protocol::JobState::kDone && !row.reason && placed)
      row.exit_code = ExitFromPair(f[kSaExit]);
    MarkFailedDependency(f[kSaReason], "", &row);
    ReadNameAndArgv(f[kSaName], f[kSaComment], &row);
    rows.push_back({std::move(row), ""});
  }
  return rows;
}

std::map<std::string, std::string> ParseScontrolRecord(std::string_view text) {
  static const char* const kWholeLine[] = {
      "Command=", "WorkDir=", "StdErr=", "StdIn=", "StdOut=", "AdminComment=", "Comment="};
  std::map<std::string, std::string> fields;
  for (const std::string& raw : SplitOn(text, '\n')) {
    std::string_view line = raw;
    while (!line.empty() && line.front() == ' ')
      line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
      line.remove_suffix(1);
    bool whole = false;
    for (const char* key : kWholeLine) {
      std::string_view k(key);
      if (line.substr(0, k.size()) == k) {
        fields[std::string(k.substr(0, k.size() - 1))] = std::string(line.substr(k.size()));
        whole = true;
        break;
      }
    }
    if (whole) continue;
    std::string* last = nullptr;
    for (const std::string& token : SplitOn(line, ' ')) {
      if (token.empty()) continue;
      std::size_t eq = token.find('=');
      bool is_key =
          eq != std::string::npos && eq > 0 && std::isalpha(static_cast<unsigned char>(token[0]));
      for (std::size_t i = 0; is_key && i < eq; ++i) {
        auto c = static_cast<unsigned char>(token[i]);
        is_key = std::isalnum(c) || c == '_' || c == ':' || c == '/';
      }
      if (is_key) {
        last = &fields[token.substr(0, eq)];
        *last = token.substr(eq + 1);
      } else if (last != nullptr) {
        *last += " " + token;
      }
    }
  }
  return fields;
}

std::vector<std::string_view> SplitScontrolRecords(std::string_view text) {
  std::vector<std::string_view> records;
  std::size_t start = 0;
  std::size_t line = 0;
  while (line < text.size()) {
    std::size_t end = text.find('\n', line);
    if (end == std::string_view::npos) end = text.size();
    const char first = text[line];
    if (line > start && first != ' ' && first != '\n') {
      records.push_back(text.substr(start, line - start));
      start = line;
    }
    line = end + 1;
  }
  if (start < text.size()) records.push_back(text.substr(start));
  return records;
}

std::optional<std::string> ExpandOutputPattern(std::string_view pattern, std::uint64_t id,
                                               std::string_view user, std::string_view name) {
  if (pattern.empty()) return std::nullopt;
  if (pattern.find('\\') != std::string_view::npos) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out += pattern[i];
      continue;
    }
    std::size_t j = i + 1;
    std::size_t width = 0;
    while (j < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[j]))) {
      width = width * 10 + static_cast<std::size_t>(pattern[j] - '0');
      ++j;
    }
    if (j >= pattern.size()) return std::nullopt;
    std::string value;
    switch (pattern[j]) {
      case '%':
        value = "%";
        break;
      case 'j':
      case 'A':
        value = std::to_string(id);
        break;
      case 'u':
        value = std::string(user);
        break;
      case 'x':
        value = std::string(name);
        break;
      case 'n':
      case 't':
        value = "0";
        break;
      case 's':
        value = "batch";
        break;
      default:
        return std::nullopt;
    }
    if (std::isdigit(static_cast<unsigned char>(value[0])) && value.size() < width) {
      value.insert(0, width - value.size(), '0');
    }
    out += value;
    i = j;
  }
  return out;
}

}  // namespace hpcb::client::slurm

#include "client/slurm/slurm_tools.h"

#include <unistd.h>

#include <cctype>
#include <functional>
#include <limits>
#include <utility>

#include "client/array_ids.h"
#include "client/format.h"
#include "common/base/cpu_list.h"

namespace hpcb::client::slurm {
namespace {

// Trap: for an array's element (12_3) that slurmctld does not hold, as one
// cancelled while pending, scontrol says "Job 12_3 not found" instead, and
// on stdout.
bool SaysInvalidJobId(const ProcessOutcome& outcome, const std::string& id) {
  const std::string not_found = "Job " + id + " not found";
  return outcome.err.find("Invalid job id") != std::string::npos ||
         outcome.err.find(not_found) != std::string::npos ||
         outcome.out.find(not_found) != std::string::npos;
}

}  // namespace

bool SaysControllerUnreachable(const ProcessOutcome& outcome) {
  for (const char* words : {"Unable to contact slurm controller", "Socket timed out",
                            "Slurm backup controller in standby mode"}) {
    if (outcome.err.find(words) != std::string::npos) return true;
  }
  return false;
}

std::string Trimmed(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.pop_back();
  std::size_t first = 0;
  while (first < text.size() && std::isspace(static_cast<unsigned char>(text[first])))
    ++first;
  return text.substr(first);
}

std::string IdText(std::uint64_t id) {
  return std::to_string(id);
}

std::string Complaint(const ProcessOutcome& outcome) {
  std::string text = Trimmed(outcome.err);
  if (text.empty()) text = Trimmed(outcome.out);
  if (!text.empty()) return text;
  if (outcome.signal != 0) return "killed by signal " + std::to_string(outcome.signal);
  return "exited with status " + std::to_string(outcome.exit_code);
}

int ReportSlurmError(const Error& error, Io io) {
  const std::string_view message = error.message();
  std::string text;
  std::size_t start = 0;
  while (true) {
    std::size_t end = message.find('\n', start);
    text += EscapeControl(message.substr(start, end - start));
    if (end == std::string_view::npos) break;
    text += '\n';
    start = end + 1;
  }
  io.out.flush();
  io.err << "dispatch: " << text << "\n";
  io.err.flush();
  return kExitError;
}

Result<ProcessOutcome> RunTool(const BackendConfig& config, const std::string& tool,
                               std::vector<std::string> args, std::string input) {
  ProcessSpec spec;
  spec.program = config.slurm_bin.empty() ? tool : config.slurm_bin + "/" + tool;
  spec.args = std::move(args);
  spec.stdin_text = std::move(input);
  spec.timeout = config.slurm_timeout;
  auto outcome = RunProcess(spec);
  if (!outcome && outcome.error().code() == ErrorCode::kNotFound) {
    return Error(ErrorCode::kNotFound,
                 outcome.error().message() +
                     " (the Slurm backend runs Slurm's own commands: install Slurm's client, "
                     "or set slurm_bin in the client configuration or HPC_BATCH_SLURM_BIN to "
                     "the directory holding them)");
  }
  return outcome;
}

Result<std::string> ToolOutput(const BackendConfig& config, const std::string& tool,
                               std::vector<std::string> args, const std::string& doing) {
  HPCB_ASSIGN_OR_RETURN(ProcessOutcome outcome, RunTool(config, tool, std::move(args)));
  if (!outcome.succeeded()) {
    return Error(SaysControllerUnreachable(outcome) ? ErrorCode::kUnavailable
                                                    : ErrorCode::kFailedPrecondition,
                 doing + ": " + Complaint(outcome));
  }
  return std::move(outcome.out);
}

// The password database is read through getent, not getpwuid_r: dispatch
// is linked statically because it starts once per submission, and a static
// glibc can only reach NSS by loading modules that must match the libc it
// was built with. This backend runs a command per call anyway.
Result<Submitter> CurrentUser(const BackendConfig& config) {
  const std::string uid = std::to_string(::getuid());
  // Where Debian and most systems keep it; elsewhere, along PATH.
  ProcessSpec spec;
  spec.program = "getent";
  for (const char* path : {"/usr/bin/getent", "/bin/getent"}) {
    if (::access(path, X_OK) == 0) {
      spec.program = path;
      break;
    }
  }
  spec.args = {"passwd", uid};
  spec.timeout = config.slurm_timeout;
  HPCB_ASSIGN_OR_RETURN(ProcessOutcome outcome, RunProcess(spec));
  if (!outcome.succeeded()) {
    return Error(ErrorCode::kNotFound, "uid " + uid + " is not in the password database (" +
                                           spec.program + " passwd " + uid + ": " +
                                           Complaint(outcome) + ")");
  }
  return ParsePasswdEntry(outcome.out, ::getuid());
}

Error NoSuchJob(const std::string& id) {
  return Error(ErrorCode::kNotFound,
               "no such job " + id +
                   " (Slurm does not know it: it never existed, or ended long enough ago "
                   "that slurmctld has forgotten it)");
}

Result<std::map<std::string, std::string>> ShowJob(const BackendConfig& config,
                                                   const std::string& id) {
  HPCB_ASSIGN_OR_RETURN(ProcessOutcome outcome, RunTool(config, "scontrol", {"show", "job", id}));
  if (!outcome.succeeded()) {
    if (SaysInvalidJobId(outcome, id)) return NoSuchJob(id);
    return Error(SaysControllerUnreachable(outcome) ? ErrorCode::kUnavailable
                                                    : ErrorCode::kFailedPrecondition,
                 "cannot read job " + id + ": " + Complaint(outcome));
  }
  auto fields = ParseScontrolRecord(outcome.out);
  if (fields.count("JobState") == 0) {
    return Error(ErrorCode::kInternal,
                 "scontrol show job " + id + " printed no JobState: " + Trimmed(outcome.out));
  }
  return fields;
}

namespace {

// Job `name` (12, or 12_3) as sacct recorded it: the row `wanted`
// picks; NoSuchJob when it has no record of it.
Result<protocol::JobRow> AccountedRow(const BackendConfig& config, const std::string& name,
                                      const std::function<bool(const protocol::JobRow&)>& wanted) {
  HPCB_ASSIGN_OR_RETURN(ProcessOutcome outcome,
                        RunTool(config, "sacct", SacctArgs({"--jobs=" + name})));
  if (!outcome.succeeded()) {
    if (SaysNoAccounting(outcome)) return NoSuchJob(name);
    return Error(ErrorCode::kFailedPrecondition, "sacct: " + Complaint(outcome));
  }
  for (SlurmJob& found : ParseSacct(outcome.out)) {
    if (wanted(found.row)) return std::move(found.row);
  }
  return NoSuchJob(name);
}

Result<protocol::JobRow> AccountedRow(const BackendConfig& config, std::uint64_t id) {
  return AccountedRow(config, IdText(id),
                      [id](const protocol::JobRow& row) { return row.id == id; });
}

}  // namespace

Result<protocol::JobRow> JobRowOf(const BackendConfig& config, std::uint64_t id) {
  auto job = ShowJob(config, IdText(id));
  if (job) return RowFromShowJob(id, *job);
  if (job.error().code() != ErrorCode::kNotFound) return job.error();
  return AccountedRow(config, id);
}

Result<protocol::JobRow> ElementRowOf(const BackendConfig& config, std::uint64_t array,
                                      std::uint32_t index) {
  const std::string name = TypedIdText({array, index});
  auto job = ShowJob(config, name);
  if (!job) {
    if (job.error().code() != ErrorCode::kNotFound) return job.error();
    return AccountedRow(config, name, [array, index](const protocol::JobRow& row) {
      return row.array_id == array && row.array_index == index;
    });
  }
  protocol::JobRow row = RowFromShowJob(array, *job);
  row.array_id = array;
  row.array_index = index;
  return row;
}

Result<std::map<std::uint64_t, protocol::JobRow>> JobRowsOf(const BackendConfig& config,
                                                            const std::set<std::uint64_t>& ids) {
  std::map<std::uint64_t, protocol::JobRow> rows;
  if (ids.size() == 1) {
    HPCB_ASSIGN_OR_RETURN(rows[*ids.begin()], JobRowOf(config, *ids.begin()));
    return rows;
  }
  // The bargain: slurmctld answers one request for every job, which
  // costs it about what one job's request does, instead of one a job.
  HPCB_ASSIGN_OR_RETURN(ProcessOutcome outcome, RunTool(config, "scontrol", {"show", "job"}));
  if (!outcome.succeeded()) {
    return Error(SaysControllerUnreachable(outcome) ? ErrorCode::kUnavailable
                                                    : ErrorCode::kFailedPrecondition,
                 "cannot read jobs (scontrol show job): " + Complaint(outcome));
  }
  for (std::string_view record : SplitScontrolRecords(outcome.out)) {
    std::map<std::string, std::string> job = ParseScontrolRecord(record);
    auto id = ParseInteger(Field(job, "JobId"), 1, std::numeric_limits<std::int64_t>::max());
    if (!id || !ids.contains(static_cast<std::uint64_t>(*id))) continue;
    const auto key = static_cast<std::uint64_t>(*id);
    rows[key] = RowFromShowJob(key, job);
  }
  // Forgotten by slurmctld (MinJobAge): only sacct may know them still.
  for (std::uint64_t id : ids) {
    if (rows.contains(id)) continue;
    HPCB_ASSIGN_OR_RETURN(rows[id], AccountedRow(config, id));
  }
  return rows;
}

std::vector<std::string> SacctArgs(std::vector<std::string> selection) {
  std::vector<std::string> args = {"--noheader", "--parsable2",
                                   std::string("--delimiter=") + kFieldSeparator, "--allocations",
                                   "--format=" + SacctFormat()};
  args.insert(args.end(), selection.begin(), selection.end());
  return args;
}

bool SaysNoAccounting(const ProcessOutcome& outcome) {
  return outcome.err.find("accounting storage is disabled") != std::string::npos;
}

std::string Field(const std::map<std::string, std::string>& job, const char* key) {
  auto it = job.find(key);
  return it == job.end() ? std::string() : it->second;
}

}  // namespace hpcb::client::slurm

#include "client/slurm/slurm_backend.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <set>
#include <thread>

#include "client/array_rows.h"
#include "client/format.h"
#include "client/slurm/slurm_nodes.h"
#include "client/slurm/slurm_tools.h"
#include "common/base/unique_fd.h"
#include "common/units.h"
#include "protocol/codec.h"

namespace hpcb::client::slurm {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kQuietNotice = std::chrono::seconds(10);
// A wait's pause between polls doubles from poll_interval up to this.
constexpr auto kLongestPoll = std::chrono::seconds(10);
constexpr const char* kFinishedWindow = "now-7days";

// Every node slurmctld knows (scontrol --oneliner show node).
Result<std::vector<SlurmNode>> ReadNodes(const BackendConfig& config) {
  HPCB_ASSIGN_OR_RETURN(std::string text,
                        ToolOutput(config, "scontrol", {"--oneliner", "show", "node"},
                                   "cannot read Slurm's nodes (scontrol show node)"));
  std::vector<SlurmNode> nodes = ParseScontrolNodes(text);
  if (nodes.empty()) {
    return Error(ErrorCode::kFailedPrecondition, "scontrol show node listed no nodes");
  }
  return nodes;
}

std::string SubmitSummary(std::uint64_t id, const protocol::SubmitRequest& request) {
  std::string text = "job " + IdText(id) + " submitted to Slurm (";
  if (request.cpu) {
    text += std::to_string(*request.cpu) + " cpu";
  } else {
    text += request.exclusive ? "the whole node" : "1 cpu";
  }
  if (request.gpu_cores > 0) text += ", " + std::to_string(request.gpu_cores) + " gpu";
  if (request.max_time_s) {
    text += ", max time " + FormatDuration(MinutesRoundedUp(*request.max_time_s) * 60);
  } else {
    text += ", the partition's default time limit";
  }
  if (request.max_mem_gb) {
    text += ", memory " + FormatGiB(request.max_mem_gb);
  } else {
    text += ", Slurm's default memory";
  }
  if (request.exclusive) text += ", exclusive";
  return text + ")\n";
}

// Slurm sizes are in MiB: 100M would show as 0.0976562G.
std::optional<double> ShownGiB(std::optional<double> gib) {
  if (!gib) return gib;
  return std::max(0.01, std::round(*gib * 100.0) / 100.0);
}

std::string LimitText(const std::optional<std::int64_t>& seconds) {
  return seconds ? FormatDuration(*seconds) : "unlimited";
}

Result<std::optional<std::int64_t>> TimeLimitOf(const std::map<std::string, std::string>& job,
                                                std::uint64_t id) {
  auto it = job.find("TimeLimit");
  if (it == job.end()) {
    return Error(ErrorCode::kInternal, "scontrol shows no TimeLimit for job " + IdText(id));
  }
  return ParseSlurmDuration(it->second);
}

// How far the printing of a job's output file got.
struct Tail {
  UniqueFd file;
  off_t position = 0;  // bytes of the file printed
};

// Copies what is new in the output file to `io.out`, opening it at the
// saved position first if it is not open (a file not there yet is no
// error). A file now shorter than what was printed was truncated (Slurm
// truncates it when the job starts, and again when it is requeued): it is
// read from its start. False when stdout is gone.
bool DrainOutput(const std::string& path, Tail* tail, Io io) {
  if (!tail->file.valid()) {
    tail->file.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!tail->file.valid()) return true;
    if (::lseek(tail->file.get(), tail->position, SEEK_SET) < 0) tail->position = 0;
  }
  struct stat status {};
  if (::fstat(tail->file.get(), &status) == 0 && status.st_size < tail->position) {
    ::lseek(tail->file.get(), 0, SEEK_SET);
    tail->position = 0;
  }
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(tail->file.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    io.out.write(buffer, n);
    tail->position += n;
  }
  io.out.flush();
  return static_cast<bool>(io.out);
}

// Where following a job's output file got to.
struct Followed {
  int code = kExitOk;  // kExitError: stdout is gone, or Slurm failed to answer
  bool opened = false;
};

// Prints the output file at `path` of job `id` (`job` as scontrol last
// showed it) from its first byte as it grows, asking slurmctld every
// poll_interval whether the job has ended.
Followed FollowOutput(const BackendConfig& config, const std::string& id, const std::string& path,
                      std::map<std::string, std::string> job, Io io) {
  const std::string name = "job " + id;
  Tail tail;
  bool opened = false;
  bool forgotten = false;  // slurmctld no longer knows the job: it ended
  auto last_output = Clock::now();
  auto last_notice = last_output;
  while (true) {
    const std::string state = forgotten ? "COMPLETED" : Field(job, "JobState");
    const bool ended = IsTerminalState(state);
    // Trap: a file there while the job is queued is an earlier run's, which
    // Slurm truncates when this one starts; a job cancelled while queued
    // never starts.
    const bool started = forgotten || (MapJobState(state).state != protocol::JobState::kQueued &&
                                       (!ended || GotANode(job)));
    if (started) {
      const off_t before = tail.position;
      if (!DrainOutput(path, &tail, io)) return {kExitError, opened};
      opened = opened || tail.file.valid();
      if (tail.position != before) last_output = Clock::now();
    }
    if (ended) {
      // Over NFS the size this client cached may hide the last lines the
      // node wrote; opening the file again refreshes it (close-to-open).
      if (tail.file.valid()) {
        tail.file.reset();
        if (!DrainOutput(path, &tail, io)) return {kExitError, opened};
      }
      return {kExitOk, opened};
    }
    std::this_thread::sleep_for(config.poll_interval);
    auto now = Clock::now();
    if (io.err_is_tty && now - last_output >= kQuietNotice && now - last_notice >= kQuietNotice) {
      auto quiet = std::chrono::duration_cast<std::chrono::seconds>(now - last_output);
      io.err << name << ": still waiting (no output for " << quiet.count() << "s)\n";
      io.err.flush();
      last_notice = now;
    }
    auto fresh = ShowJob(config, id);
    if (!fresh) {
      // Forgotten by slurmctld between two polls: it ended.
      if (fresh.error().code() != ErrorCode::kNotFound) {
        return {ReportSlurmError(fresh.error(), io), opened};
      }
      forgotten = true;
    } else {
      job = std::move(*fresh);
    }
  }
}

}  // namespace

SlurmBackend::SlurmBackend(BackendConfig config) : config_(std::move(config)) {}

int SlurmBackend::Submit(const protocol::SubmitRequest& request,
                         const std::map<std::string, std::string>& command_env,
                         const std::vector<TypedId>& after, bool wait, Io io) {
  // Not request.exec_error: Slurm runs the command on a node of its
  // choosing, whose files this machine's need not be.
  protocol::SubmitRequest checked = request;
  checked.env = command_env;
  if (auto valid = checked.Validate(); !valid) return ReportSlurmError(valid.error(), io);
  auto who = CurrentUser(config_);
  if (!who) return ReportSlurmError(who.error(), io);
  // The output place was checked as the user when the request was built
  // (CheckOutputPlace, as for the local backend): Slurm itself would
  // only fail the job once it starts.
  std::vector<std::string> dependencies;
  for (const TypedId& id : after)
    dependencies.push_back(TypedIdText(id));
  auto job = MapSubmit(checked, command_env, *who, checked.output_is_dir, dependencies);
  if (!job) return ReportSlurmError(job.error(), io);
  auto outcome = RunTool(config_, "sbatch", job->args, job->script);
  if (!outcome) return ReportSlurmError(outcome.error(), io);
  if (!outcome->succeeded()) {
    return ReportSlurmError(
        Error(ErrorCode::kFailedPrecondition, "Slurm refused the job: " + Complaint(*outcome)), io);
  }
  auto id = ParseSbatchId(outcome->out);
  if (!id) return ReportSlurmError(id.error(), io);
  std::string warnings = Trimmed(outcome->err);
  if (!warnings.empty()) io.err << warnings << "\n";
  for (const std::string& note : job->notes)
    io.err << "dispatch: note: " << note << "\n";
  io.err.flush();
  // With --wait, stdout carries the job's output alone, as locally.
  std::ostream& said = wait ? io.err : io.out;
  said << SubmitSummary(*id, checked);
  const std::string path =
      job->output_template.empty() ? "" : OutputPathFor(job->output_template, *id);
  if (!path.empty()) said << "output will be saved to " << path << "\n";
  if (!job->error_template.empty()) {
    said << "stderr will be saved to " << OutputPathFor(job->error_template, *id) << "\n";
  }
  said.flush();
  if (!wait) return kExitOk;
  return FollowThenWait(*id, path, io);
}

int SlurmBackend::FollowThenWait(std::uint64_t id, const std::string& path, Io io) {
  if (!path.empty()) {
    auto job = ShowJob(config_, IdText(id));
    if (!job) return ReportSlurmError(job.error(), io);
    const std::string state = Field(*job, "JobState");
    if (MapJobState(state).state == protocol::JobState::kQueued) {
      io.err << "job " << id << " is queued; waiting for it to start...\n";
      io.err.flush();
    }
    Followed followed = FollowOutput(config_, IdText(id), path, std::move(*job), io);
    if (followed.code != kExitOk) return followed.code;
    // A job that never started wrote nothing; the wait says why.
    auto row = JobRowOf(config_, id);
    if (!followed.opened && row && row->start_time) {
      io.err << "dispatch: job " << id << "'s output file " << EscapeControl(path)
             << " cannot be opened here\n";
    }
  }
  return Wait({TypedId{id, std::nullopt}}, WaitOptions{}, io);
}

// Slurm keeps no usage columns to show: `long_format` changes nothing.
int SlurmBackend::List(const protocol::ListRequest& request, bool json, bool /*long_format*/,
                       Io io) {
  std::string user;
  if (!request.all) {
    auto who = CurrentUser(config_);
    if (!who) return ReportSlurmError(who.error(), io);
    user = who->user;
  }
  std::vector<std::string> squeue_args = {"--noheader", "--Format=" + SqueueFormat()};
  if (!request.all) squeue_args.push_back("--user=" + user);
  auto active = ToolOutput(config_, "squeue", squeue_args, "cannot list jobs (squeue)");
  if (!active) return ReportSlurmError(active.error(), io);
  std::vector<SlurmJob> jobs = ParseSqueue(*active);

  if (request.finished) {
    std::vector<std::string> selection = {std::string("--starttime=") + kFinishedWindow};
    selection.push_back(request.all ? "--allusers" : "--user=" + user);
    auto outcome = RunTool(config_, "sacct", SacctArgs(selection));
    if (!outcome) return ReportSlurmError(outcome.error(), io);
    if (!outcome->succeeded()) {
      if (SaysNoAccounting(*outcome)) {
        return ReportSlurmError(
            Error(ErrorCode::kFailedPrecondition,
                  "finished jobs come from Slurm's job accounting, which this cluster does "
                  "not keep (sacct: " +
                      Complaint(*outcome) +
                      "); 'dispatch list' without --finished shows queued and running jobs, "
                      "and 'dispatch wait ID' gives one job's exit code while slurmctld "
                      "still remembers it"),
            io);
      }
      return ReportSlurmError(Error(ErrorCode::kFailedPrecondition,
                                    "cannot list finished jobs (sacct): " + Complaint(*outcome)),
                              io);
    }
    std::set<std::uint64_t> seen;
    for (const SlurmJob& job : jobs)
      seen.insert(job.row.id);
    for (SlurmJob& job : ParseSacct(outcome->out)) {
      if (job.row.state == protocol::JobState::kDone && seen.insert(job.row.id).second)
        jobs.push_back(std::move(job));
    }
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const SlurmJob& a, const SlurmJob& b) { return a.row.id < b.row.id; });
  const double now = static_cast<double>(std::time(nullptr));
  if (json) {
    protocol::ListReply reply;
    reply.now = now;
    for (const SlurmJob& job : jobs)
      reply.jobs.push_back(job.row);
    io.out << protocol::Encode(reply) << "\n";
    return kExitOk;
  }
  Rendered rendered = RenderList(jobs, request.finished, now);
  io.out << rendered.out;
  io.out.flush();
  io.err << rendered.err;
  return kExitOk;
}

Result<std::vector<protocol::JobRow>> SlurmBackend::JobsNamed(const std::string& name) {
  HPCB_ASSIGN_OR_RETURN(Submitter who, CurrentUser(config_));
  HPCB_ASSIGN_OR_RETURN(std::string text,
                        ToolOutput(config_, "squeue",
                                   {"--noheader", "--Format=" + SqueueFormat(),
                                    "--user=" + who.user, "--name=" + name, "--states=all"},
                                   "cannot look for jobs named " + name + " (squeue)"));
  std::vector<protocol::JobRow> rows;
  for (SlurmJob& job : ParseSqueue(text))
    rows.push_back(std::move(job.row));
  return rows;
}

int SlurmBackend::Attach(const TypedId& typed, Io io) {
  const std::string id = TypedIdText(typed);
  auto job = ShowJob(config_, id);
  if (!job) return ReportSlurmError(job.error(), io);
  const std::string state = Field(*job, "JobState");
  const std::string path = Field(*job, "StdOut");
  const std::string name = "job " + id;
  if (path.empty() || path == "/dev/null") {
    io.err << name
           << (IsTerminalState(state)
                   ? " has finished; it ran with --no-output, so nothing was kept\n"
                   : " runs with --no-output, so there is no output to follow\n");
    return kExitOk;
  }
  if (MapJobState(state).state == protocol::JobState::kQueued) {
    io.err << name << " is queued; waiting for it to start...\n";
  } else if (IsTerminalState(state)) {
    io.err << name << " has finished; its output is at " << path << "\n";
  }
  io.err.flush();
  Followed followed = FollowOutput(config_, id, path, std::move(*job), io);
  if (followed.code != kExitOk || followed.opened) return followed.code;
  return ReportSlurmError(Error::FromErrno(errno, name + " has ended but its output file " + path +
                                                      " cannot be opened here"),
                          io);
}

int SlurmBackend::Kill(const TypedId& typed, Io io) {
  const std::string id = TypedIdText(typed);
  auto job = ShowJob(config_, id);
  if (!job) return ReportSlurmError(job.error(), io);
  const std::string state = Field(*job, "JobState");
  if (IsTerminalState(state)) {
    return ReportSlurmError(
        Error(ErrorCode::kFailedPrecondition, "job " + id + " already finished"), io);
  }
  auto outcome = RunTool(config_, "scancel", {id});
  if (!outcome) return ReportSlurmError(outcome.error(), io);
  // scancel says "error:" (or "denied") yet may exit 0.
  if (!outcome->succeeded() || !Trimmed(outcome->err).empty()) {
    return ReportSlurmError(Error(ErrorCode::kFailedPrecondition,
                                  "Slurm refused to cancel job " + id + ": " + Complaint(*outcome)),
                            io);
  }
  if (MapJobState(state).state == protocol::JobState::kQueued) {
    io.out << "job " << id << " removed from the queue\n";
  } else {
    io.out << "job " << id << ": kill signal sent\n";
  }
  return kExitOk;
}

int SlurmBackend::Hold(const std::vector<TypedId>& ids, bool hold, Io io) {
  const char* verb = hold ? "hold" : "release";
  int code = kExitOk;
  for (const TypedId& typed : ids) {
    const std::string id = TypedIdText(typed);
    auto job = ShowJob(config_, id);
    if (!job) {
      code = ReportSlurmError(job.error(), io);
      continue;
    }
    const std::string state = Field(*job, "JobState");
    if (MapJobState(state).state != protocol::JobState::kQueued) {
      code = ReportSlurmError(
          Error(ErrorCode::kFailedPrecondition,
                "job " + id + " " + (IsTerminalState(state) ? "has finished" : "is running") +
                    "; only a queued job can be held or released"),
          io);
      continue;
    }
    const std::string reason = Field(*job, "Reason");
    const bool was_held = reason == "JobHeldUser" || reason == "JobHeldAdmin";
    if (was_held == hold) {
      io.out << RenderHold(id, protocol::HoldReply{hold, false});
      continue;
    }
    auto outcome = RunTool(config_, "scontrol", {verb, id});
    if (!outcome) {
      code = ReportSlurmError(outcome.error(), io);
      continue;
    }
    if (!outcome->succeeded() || !Trimmed(outcome->err).empty()) {
      code = ReportSlurmError(
          Error(ErrorCode::kFailedPrecondition, "Slurm refused to " + std::string(verb) + " job " +
                                                    id + ": " + Complaint(*outcome)),
          io);
      continue;
    }
    io.out << RenderHold(id, protocol::HoldReply{hold, true});
  }
  return code;
}

// Plain text even with --json: there is no daemon reply to print.
int SlurmBackend::JobField(const protocol::JobFieldRequest& request, bool /*json*/, Io io) {
  const std::uint64_t id = request.id;
  auto job = ShowJob(config_, IdText(id));
  if (!job) return ReportSlurmError(job.error(), io);
  auto before = TimeLimitOf(*job, id);
  if (!before) return ReportSlurmError(before.error(), io);
  const std::string prefix = "job " + IdText(id) + " max-time ";
  if (request.action == "get") {
    io.out << prefix << LimitText(*before) << "\n";
    return kExitOk;
  }
  if (IsTerminalState(Field(*job, "JobState"))) {
    return ReportSlurmError(
        Error(ErrorCode::kFailedPrecondition, "job " + IdText(id) + " already finished"), io);
  }
  if (!request.value || *request.value < 1) {
    return ReportSlurmError(
        InvalidArgument("max-time must be positive; use 'set' to shorten a job"), io);
  }
  const bool add = request.action == "add";
  if (add && !before->has_value()) {
    return ReportSlurmError(
        Error(ErrorCode::kFailedPrecondition, "job " + IdText(id) + " has no time limit to add to"),
        io);
  }
  const std::int64_t minutes = MinutesRoundedUp(*request.value);
  const std::string limit = "TimeLimit=" + std::string(add ? "+" : "") + std::to_string(minutes);
  auto outcome = RunTool(config_, "scontrol", {"update", "JobId=" + IdText(id), limit});
  if (!outcome) return ReportSlurmError(outcome.error(), io);
  if (!outcome->succeeded()) {
    return ReportSlurmError(Error(ErrorCode::kPermissionDenied,
                                  "Slurm refused to change job " + IdText(id) +
                                      "'s time limit: " + Complaint(*outcome) +
                                      " (Slurm lets a user lower their own job's limit; raising it "
                                      "takes a Slurm operator or administrator)"),
                            io);
  }
  auto updated = ShowJob(config_, IdText(id));
  if (!updated) return ReportSlurmError(updated.error(), io);
  auto after = TimeLimitOf(*updated, id);
  if (!after) return ReportSlurmError(after.error(), io);
  if (minutes * 60 != *request.value) {
    io.err << "dispatch: note: Slurm counts time limits in whole minutes: "
           << FormatDuration(*request.value) << " becomes " << FormatDuration(minutes * 60) << "\n";
  }
  io.out << prefix << LimitText(*before) << " -> " << LimitText(*after) << "\n";
  return kExitOk;
}

int SlurmBackend::Wait(const std::vector<TypedId>& ids, const WaitOptions& options, Io io) {
  // Each element waited for is polled under a key of its own that no
  // Slurm job id (32 bits) reaches.
  constexpr std::uint64_t kElementKeys = std::uint64_t{1} << 63;
  std::map<std::uint64_t, TypedId> elements;
  std::vector<std::uint64_t> keys;
  for (const TypedId& id : ids) {
    if (!id.index) {
      keys.push_back(id.id);
      continue;
    }
    auto same = std::find_if(elements.begin(), elements.end(), [&id](const auto& element) {
      return element.second.id == id.id && element.second.index == id.index;
    });
    const std::uint64_t key = same != elements.end() ? same->first : kElementKeys + elements.size();
    elements.emplace(key, id);
    keys.push_back(key);
  }
  std::optional<Clock::time_point> deadline;
  if (options.timeout_s) {
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(*options.timeout_s));
  }
  auto poll = [this, deadline, &elements](const std::set<std::uint64_t>& pending)
      -> Result<std::map<std::uint64_t, protocol::JobRow>> {
    // No Slurm command outlives --timeout.
    BackendConfig config = config_;
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
      config.slurm_timeout =
          std::max(std::chrono::milliseconds(1), std::min(left, config.slurm_timeout));
    }
    std::map<std::uint64_t, protocol::JobRow> rows;
    std::set<std::uint64_t> jobs;
    for (std::uint64_t key : pending) {
      auto element = elements.find(key);
      if (element == elements.end()) {
        jobs.insert(key);
        continue;
      }
      HPCB_ASSIGN_OR_RETURN(rows[key],
                            ElementRowOf(config, element->second.id, *element->second.index));
    }
    if (jobs.empty()) return rows;
    Result<std::map<std::uint64_t, protocol::JobRow>> found = JobRowsOf(config, jobs);
    if (!found) return found.error();
    rows.merge(*found);
    return rows;
  };
  PollPace pace;
  pace.poll_s = std::chrono::duration<double>(config_.poll_interval).count();
  pace.max_s = std::chrono::duration<double>(kLongestPoll).count();
  pace.patient_from_start = true;
  return WaitForJobs(keys, options, pace, poll, io, ReportSlurmError);
}

int SlurmBackend::Info(bool json, Io io) {
  auto nodes = ReadNodes(config_);
  if (!nodes) return ReportSlurmError(nodes.error(), io);
  auto config = ToolOutput(config_, "scontrol", {"show", "config"},
                           "cannot read Slurm's configuration (scontrol show config)");
  if (!config) return ReportSlurmError(config.error(), io);
  auto queue = ToolOutput(config_, "squeue", {"--noheader", "--all", "--format=%T %r"},
                          "cannot count jobs (squeue)");
  if (!queue) return ReportSlurmError(queue.error(), io);
  protocol::InfoReply reply = InfoFrom(*nodes, SchedulerTypeOf(*config));
  CountQueue(*queue, &reply);
  io.out << (json ? protocol::Encode(reply) + "\n" : RenderSlurmInfo(reply, *nodes));
  return kExitOk;
}

int SlurmBackend::Drain(bool on, Io io) {
  auto nodes = ReadNodes(config_);
  if (!nodes) return ReportSlurmError(nodes.error(), io);
  std::vector<SlurmNode> targets;
  for (const SlurmNode& node : *nodes) {
    const std::string name = EscapeControl(node.name);
    const std::string why = node.reason.empty() ? "" : " (" + EscapeControl(node.reason) + ")";
    if (on && DrainableByDispatch(node)) targets.push_back(node);
    if (!on && DrainedByDispatch(node)) targets.push_back(node);
    // A down node, or one whose Reason is someone else's (a fault,
    // maintenance): draining would overwrite that Reason, and a later
    // resume would put the node back into service.
    if (on && !IsDraining(node.state) && !DrainableByDispatch(node)) {
      io.err << "dispatch: note: node " << name << " is left as it is: it is "
             << EscapeControl(node.state) << why << "\n";
    }
    if (!on && !DrainedByDispatch(node) && (IsDraining(node.state) || IsDownOrFailed(node.state))) {
      io.err << "dispatch: note: node " << name << " stays " << EscapeControl(node.state) << why
             << ": resume only undoes `dispatch drain` on a node that is not down; "
                "'scontrol update NodeName="
             << name << " State=RESUME' resumes it\n";
    }
  }
  if (targets.empty()) {
    io.out << (on ? "already draining\n" : "not draining\n");
    return kExitOk;
  }
  const std::string names = NodeNames(targets);
  std::vector<std::string> args = {"update", "NodeName=" + names};
  if (on) {
    args.emplace_back("State=DRAIN");
    args.emplace_back(std::string("Reason=") + kDrainReason);
  } else {
    args.emplace_back("State=RESUME");
  }
  auto outcome = RunTool(config_, "scontrol", args);
  if (!outcome) return ReportSlurmError(outcome.error(), io);
  if (!outcome->succeeded() || !Trimmed(outcome->err).empty()) {
    return ReportSlurmError(Error(ErrorCode::kPermissionDenied,
                                  "Slurm refused to " + std::string(on ? "drain" : "resume") + " " +
                                      names + ": " + Complaint(*outcome) +
                                      " (draining and resuming nodes takes root, SlurmUser or "
                                      "a Slurm administrator)"),
                            io);
  }
  io.out << (on ? "draining: queued jobs will not be started; running jobs finish\n"
                : "resumed: queued jobs are started again\n");
  return kExitOk;
}

int SlurmBackend::Output(const TypedId& typed, const std::optional<std::string>& to, Io io) {
  const std::string id = TypedIdText(typed);
  if (to) {
    return ReportSlurmError(
        Error(ErrorCode::kFailedPrecondition,
              "output --to is not available with the Slurm backend: Slurm writes a job's "
              "output file itself and keeps no copy to send elsewhere; copy the file instead"),
        io);
  }
  auto job = ShowJob(config_, id);
  if (!job) return ReportSlurmError(job.error(), io);
  const std::string path = Field(*job, "StdOut");
  const std::string name = "job " + id;
  if (path.empty() || path == "/dev/null") {
    return ReportSlurmError(
        Error(ErrorCode::kFailedPrecondition, name + " ran with --no-output; nothing was kept"),
        io);
  }
  if (!IsTerminalState(Field(*job, "JobState"))) {
    return ReportSlurmError(Error(ErrorCode::kFailedPrecondition,
                                  name + " has not finished; Slurm writes its output to " + path +
                                      " as it runs ('dispatch attach " + id + "' follows it)"),
                            io);
  }
  if (::access(path.c_str(), F_OK) != 0) {
    return ReportSlurmError(
        Error::FromErrno(errno, name + "'s output was to go to " + path +
                                    ", which cannot be found here (a job that never started "
                                    "wrote nothing; otherwise the file is on a filesystem "
                                    "this host does not share)"),
        io);
  }
  io.out << name << "'s output is at " << EscapeControl(path) << "\n";
  return kExitOk;
}

Rendered RenderList(const std::vector<SlurmJob>& jobs, bool finished, double now) {
  Rendered rendered;
  if (jobs.empty()) {
    rendered.out = "no jobs\n";
    return rendered;
  }
  bool show_gpu = false;
  bool show_name = false;
  for (const SlurmJob& job : jobs) {
    show_gpu = show_gpu || job.row.gpus > 0;
    show_name = show_name || job.row.name.has_value();
  }
  std::vector<std::vector<std::string>> table = {
      ListHeader(show_name, show_gpu, finished, /*usage_columns=*/false)};
  for (const SlurmJob& job : jobs) {
    const protocol::JobRow& row = job.row;
    std::string uptime = UptimeCell(row);
    if (row.state == protocol::JobState::kQueued && !job.pending_reason.empty()) {
      uptime += " (" + job.pending_reason + ")";
    }
    std::vector<std::string> cells = {
        row.user,
        JobIdText(row),
        JoinForDisplay(row.argv),
        FormatStartTime(row.start_time, now),
        uptime,
        row.max_time_s > 0 ? FormatDuration(row.max_time_s) : "unlimited",
        FormatGiB(ShownGiB(row.max_mem_gb))};
    if (show_name) cells.insert(cells.begin() + 2, NameCell(row));
    if (show_gpu) cells.push_back(row.gpus > 0 ? std::to_string(row.gpus) : "-");
    cells.push_back(row.exclusive ? "yes" : "no");
    if (finished) {
      cells.push_back(std::string(protocol::NameOf(row.state)));
      cells.push_back(ExitCell(row));
    }
    table.push_back(std::move(cells));
  }
  rendered.out = FormatTable(table);
  for (const SlurmJob& job : jobs) {
    if (job.row.reason && *job.row.reason == protocol::JobReason::kOom) {
      rendered.err += "job " + std::to_string(job.row.id) + ": killed for exceeding its " +
                      FormatGiB(ShownGiB(job.row.max_mem_gb)) +
                      " memory limit; pass --max-mem to raise it\n";
    }
  }
  return rendered;
}

}  // namespace hpcb::client::slurm

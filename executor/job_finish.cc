// A job's files and its end: the job dir and its output buffer, info.json,
// and finishing a job (cgroup, output delivery through the launcher, the
// spec, the broker's event).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/base/log.h"
#include "common/host/run_record.h"
#include "executor/executor_server.h"
#include "executor/job_cgroup.h"
#include "executor/job_env.h"

namespace hpcb::executor {
namespace {

using protocol::Encode;
using protocol::SignalNote;
using protocol::SpecState;
using protocol::WireError;

// The job info readable by the user and the admin group (never the env).
struct JobInfo {
  const LaunchSpec* spec;
  template <class A>
  void save(A& ar) const {
    using protocol::Put;
    Put(ar, "id", spec->id);
    Put(ar, "uid", spec->who.uid);
    Put(ar, "gid", spec->who.gid);
    Put(ar, "argv", spec->argv);
    Put(ar, "name", spec->name);
    Put(ar, "cwd", spec->cwd);
    Put(ar, "state", spec->state);
    Put(ar, "pid", spec->pid);
    Put(ar, "start_time", spec->start_time);
    Put(ar, "output_dest", spec->output_dest);
    Put(ar, "error_dest", spec->error_dest);
    Put(ar, "placement", spec->placement);
    // The original tool's keys, as it wrote them, which scripts read.
    Put(ar, "cpus", spec->placement ? spec->placement->cpus : std::vector<int>{});
    if (std::optional<int> node = NumaNode()) {
      Put(ar, "numa_node", *node);
    } else {
      Put(ar, "numa_node", nullptr);
    }
    Put(ar, "exit_code", spec->exit_code);
    Put(ar, "end_time", spec->end_time);
    Put(ar, "usage", spec->usage);
    Put(ar, "max_mem_gib", BudgetGiB());
  }
  // Where its cpus and memory are, when that is one node.
  std::optional<int> NumaNode() const {
    const auto& placement = spec->placement;
    if (!placement || placement->spans_nodes || placement->mems.size() != 1) return std::nullopt;
    return placement->mems[0];
  }
  // The placement's budget as one figure, as the job was promised it.
  std::optional<double> BudgetGiB() const {
    if (!spec->placement) return std::nullopt;
    double total = 0;
    for (const auto& [node, gib] : spec->placement->mem_by_node)
      total += gib;
    return total;
  }
};

// Delivery errors are kept to a line in the job's record.
constexpr std::size_t kMaxOutputError = 400;

// How long the launcher has to answer a delivery: this, plus a second per
// kDeliveryAnswerBytesPerS. The launcher bounds the delivery itself (a shorter
// deadline, after which it kills the helper and answers); this only
// catches a launcher that stopped answering at all.
constexpr std::chrono::milliseconds kDeliveryAnswerBase{120000};
constexpr std::uint64_t kDeliveryAnswerBytesPerS = 4u << 20;

// Past this a user's --notify commands are dropped (logged), and this
// long the launcher has to answer one (it kills the command itself after
// kNotifySeconds).
constexpr std::size_t kMaxWaitingNotify = 32;
constexpr std::chrono::seconds kNotifyDeadline{protocol::kNotifySeconds + 20};
// The launcher kills an emptying helper after kEmptyDirSeconds and answers.
constexpr std::chrono::seconds kEmptyDirDeadline{protocol::kEmptyDirSeconds + 60};
constexpr std::size_t kMaxWaitingDirs = 64;

}  // namespace

std::optional<JobDirOwner> ExecutorServer::OwnerOf(const LaunchSpec& spec) const {
  if (!facts_.as_root) return std::nullopt;
  return JobDirOwner{spec.who.uid, config_.admin_gid.value_or(0)};
}

Result<UniqueFd> ExecutorServer::OpenBuffer(const LaunchSpec& spec, int flags,
                                            const std::string& name) const {
  HPCB_ASSIGN_OR_RETURN(UniqueFd dir, OpenJobDir(job_dir(spec.id)));
  return OpenJobBuffer(dir.get(), flags, OwnerOf(spec), name);
}

Result<void> ExecutorServer::MakeJobDir(const LaunchSpec& spec, bool start_follows) {
  const std::string dir = job_dir(spec.id);
  std::optional<std::string> info;
  if (!start_follows) info = InfoText(spec);
  if (Result<UniqueFd> made = CreateJobDir(dir, OwnerOf(spec), info, spec.error_dest.has_value());
      !made) {
    // A half-made dir would block the id: nothing of it may stay.
    if (made.error().code() != ErrorCode::kAlreadyExists) DropJobDir(spec.id, spec.who);
    return made.error();
  }
  if (!config_.no_dev_dir) {
    const std::string link = config_.dev_dir + "/jobs/" + std::to_string(spec.id);
    // A leftover link is removed only when found: no failing unlink per job.
    int linked = ::symlink(dir.c_str(), link.c_str());
    if (linked != 0 && errno == EEXIST) {
      ::unlink(link.c_str());
      linked = ::symlink(dir.c_str(), link.c_str());
    }
    if (linked != 0) {
      LogWarning("cannot create " + link + ": " + std::strerror(errno));
    }
  }
  return Ok();
}

std::string ExecutorServer::InfoText(const LaunchSpec& spec) {
  return Encode(JobInfo{&spec}) + "\n";
}

void ExecutorServer::WriteInfo(const LaunchSpec& spec) {
  Result<void> written = [&]() -> Result<void> {
    HPCB_ASSIGN_OR_RETURN(UniqueFd dir, OpenJobDir(job_dir(spec.id)));
    return ReplaceJobFile(dir.get(), "info.json", InfoText(spec), 0640, OwnerOf(spec));
  }();
  if (!written) {
    LogWarning("cannot write info.json of job " + std::to_string(spec.id) + ": " +
               written.error().message());
  }
}

void ExecutorServer::AppendLine(const LaunchSpec& spec, const std::string& line) {
  Result<UniqueFd> fd = OpenBuffer(spec, O_WRONLY | O_APPEND);
  if (!fd) {
    LogWarning("job " + std::to_string(spec.id) + ": " + fd.error().message());
    return;
  }
  (void)protocol::WriteAllToFile(fd->get(), line + "\n");
}

void ExecutorServer::DeliverOutput(const LaunchSpec& spec,
                                   std::function<void(std::optional<std::string>)> done) {
  // stdout's, then stderr's with --error; the job keeps one output_error for both.
  DeliverBuffer(
      spec, "output", spec.output_dest,
      [this, spec, done = std::move(done)](const std::optional<std::string>& error) {
        if (!spec.error_dest) return done(error);
        DeliverBuffer(
            spec, "error", spec.error_dest, [spec, error, done](std::optional<std::string> late) {
              if (late)
                late = std::string(protocol::kStderrOnlyError) + *spec.error_dest + ": " + *late;
              done(error && late ? *error + "; " + *late : error ? error : late);
            });
      });
}

void ExecutorServer::DeliverBuffer(const LaunchSpec& spec, const std::string& name,
                                   const std::optional<std::string>& to,
                                   std::function<void(std::optional<std::string>)> done) {
  const std::uint64_t id = spec.id;
  if (!to) {
    // --no-output: the buffer served attach while the job ran; now it goes.
    if (Result<UniqueFd> dir = OpenJobDir(job_dir(id)); dir)
      (void)::unlinkat(dir->get(), name.c_str(), 0);
    return done(std::nullopt);
  }
  const std::string buffer_path = job_dir(id) + "/" + name;
  Result<UniqueFd> buffer = OpenBuffer(spec, O_RDONLY, name);
  if (!buffer) {
    if (buffer.error().code() == ErrorCode::kNotFound)
      return done(std::nullopt);  // nothing to deliver
    LogWarning("job " + std::to_string(id) + ": not delivering " + name + ": " +
               buffer.error().message());
    return done("not delivered: " + buffer.error().message());
  }
  struct stat st {};
  const std::uint64_t size =
      ::fstat(buffer->get(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  const std::uint64_t max_bytes = static_cast<std::uint64_t>(config_.max_output_mib) << 20;
  const protocol::DeliverRequest request{
      .id = id, .who = spec.who, .dest = *to, .max_bytes = max_bytes};
  const std::chrono::milliseconds timeout =
      kDeliveryAnswerBase +
      std::chrono::seconds(std::min(size, max_bytes) / kDeliveryAnswerBytesPerS);
  AskLauncher<protocol::DeliverReply>(
      request, {buffer->get()}, timeout, "the launcher's output delivery",
      [this, id, name, dest = *to, buffer_path,
       done = std::move(done)](Result<protocol::DeliverReply> reply) {
        std::optional<std::string> error;
        if (!reply) {
          error = reply.error().message();
        } else if (reply->error) {
          error = reply->error->message;
        }
        if (!error) {
          Result<UniqueFd> dir = OpenJobDir(job_dir(id));
          if (dir) (void)::unlinkat(dir->get(), name.c_str(), 0);
          return done(std::nullopt);
        }
        // The reason alone: whoever shows it says where it was going.
        if (error->size() > kMaxOutputError) error->resize(kMaxOutputError);
        LogWarning("job " + std::to_string(id) + ": could not save " + name + " to " + dest + ": " +
                   *error + "; keeping " + buffer_path);
        done(std::move(error));
      });
}

void ExecutorServer::OnChildExited(const protocol::ChildExited& event) {
  auto shepherded = [&event](const LaunchSpec& spec) {
    return spec.state == SpecState::kRunning && spec.shepherd == event.pid;
  };
  if (auto hint = by_shepherd_.find(event.pid); hint != by_shepherd_.end()) {
    const std::uint64_t id = hint->second;
    by_shepherd_.erase(hint);
    if (auto it = jobs_.find(id); it != jobs_.end() && shepherded(it->second)) {
      return Finish(id);
    }
  }
  for (const auto& [id, spec] : jobs_) {
    if (shepherded(spec)) {
      Finish(id);
      return;
    }
  }
}

void ExecutorServer::Finish(std::uint64_t id) {
  // Refused without a word: a job's end is seen both by its shepherd's
  // exit event and by the poll of foreign jobs, and the second finds it
  // finishing or ended.
  if (!CheckPhase(JobOperation::kFinish, PhaseOf(id), id)) return;
  LaunchSpec& spec = jobs_.at(id);
  in_flight_[id] = JobPhase::kFinishing;
  foreign_.erase(id);
  protocol::JobExited event{.id = id, .end_time = host::EpochNow()};
  Result<host::RunRecord> record = host::LoadRunRecord(run_dir(), id);
  // The shepherd's own status says nothing of the job's: the record does.
  if (record && record->status)
    event.exit_code = ExitCodeFromStatus(static_cast<int>(*record->status));
  if (record && record->end_time) event.end_time = *record->end_time;
  event.usage = MeasureUsage(spec, record ? &*record : nullptr, event.end_time);
  event.oom = cgroups_.OomKilled(id);
  // Whatever the job left behind is killed; the group goes once empty,
  // retried from Tick (never waited for here).
  if (Result<void> removed = cgroups_.Remove(id); !removed) {
    cgroups_to_remove_[id] = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  }
  if (!config_.no_dev_dir) ::unlink((config_.dev_dir + "/jobs/" + std::to_string(id)).c_str());
  if (StateDirNearlyFull()) {
    event.note = "the state directory was full when it ended; its output may be cut short";
  }
  DeliverOutput(spec, [this, id, event](std::optional<std::string> output_error) mutable {
    in_flight_.erase(id);
    auto found = jobs_.find(id);
    if (found == jobs_.end()) return;
    LaunchSpec& done_spec = found->second;
    done_spec.state = SpecState::kExited;
    done_spec.exit_code = event.exit_code;
    done_spec.oom = event.oom;
    done_spec.end_time = event.end_time;
    done_spec.output_error = output_error;
    done_spec.usage = event.usage;
    // A plain end need not be flushed before the broker hears of it: the
    // run record holds it, flushed, and after a power cut Finish runs again
    // from there (delivery finds a delivered buffer gone; usage reads what
    // wait4 saw, the cgroup being gone). What the run record lacks, an OOM
    // kill, a note or a failed delivery, is flushed first.
    const bool plain = !event.oom && !event.note && !output_error;
    const SpecStore::Flush flush =
        plain ? SpecStore::Flush::kSoon : SpecStore::Flush::kBeforeAnswers;
    (void)Save(done_spec, flush);
    WriteInfo(done_spec);
    event.output_error = std::move(output_error);
    LogInfo("job " + std::to_string(id) + " finished (exit=" +
            (event.exit_code ? std::to_string(*event.exit_code) : std::string("unknown")) + ")");
    SendToBroker(Encode(event));
    Notify(done_spec, event);
  });
  // The bargain: while a user helper copies its output (a fork, an exec,
  // the copy), the job's cpus and memory go to the next job, for one more
  // message per job with output. Held like every answer, so it never
  // overtakes the start's own answer of this turn; with nothing to deliver
  // the end above went out in this turn already.
  if (in_flight_.contains(id))
    SendToBroker(Encode(protocol::JobExited{.id = id, .delivering = true}));
}

void ExecutorServer::Notify(const LaunchSpec& spec, const protocol::JobExited& event) {
  const auto note = signalled_.extract(spec.id);
  if (!spec.notify) return;
  std::deque<protocol::NotifyRequest>& waiting = notify_[spec.who.uid];
  if (waiting.size() > kMaxWaitingNotify) {
    return LogWarning("job " + std::to_string(spec.id) + ": its --notify command is dropped: " +
                      spec.who.user + " has " + std::to_string(kMaxWaitingNotify) + " waiting");
  }
  const std::string_view state =
      EndState(note ? note.mapped() : SignalNote::kNone, event.oom, event.exit_code);
  std::map<std::string, std::string> end{
      {"HPC_BATCH_JOB_STATE", std::string(state)},
      {"HPC_BATCH_EXIT_CODE", event.exit_code ? std::to_string(*event.exit_code) : ""}};
  if (spec.array_index) end["HPC_BATCH_ARRAY_INDEX"] = std::to_string(*spec.array_index);
  const host::PasswdFacts who{spec.who.user, spec.home, spec.shell};
  waiting.push_back({.id = spec.id,
                     .who = spec.who,
                     .command = *spec.notify,
                     .cwd = spec.cwd,
                     .env = BuildJobEnv(who, end, spec.id, {}, false, facts_.lang)});
  if (waiting.size() == 1) RunNotify(spec.who.uid);
}

void ExecutorServer::RunNotify(std::uint32_t uid) {
  const protocol::NotifyRequest& hook = notify_.at(uid).front();
  AskLauncher<protocol::DeliverReply>(
      hook, {}, kNotifyDeadline, "the launcher's --notify run",
      [this, uid, id = hook.id](Result<protocol::DeliverReply> reply) {
        std::optional<WireError> error = reply ? reply->error : WireError::From(reply.error());
        if (error)
          LogWarning("job " + std::to_string(id) + ": its --notify command " + error->message);
        std::deque<protocol::NotifyRequest>& waiting = notify_.at(uid);
        waiting.pop_front();
        if (waiting.empty()) return (void)notify_.erase(uid);
        RunNotify(uid);
      });
}

void ExecutorServer::DropJobDir(std::uint64_t id, const protocol::UserIdentity& who) {
  Result<UniqueFd> left = RemoveJobDir(job_dir(id));
  if (!left) return LogWarning("job " + std::to_string(id) + ": " + left.error().message());
  if (!left->valid()) return;  // the usual case: gone, no helper
  std::deque<protocol::EmptyDirRequest>& waiting = to_empty_[who.uid];
  // A user who stops their helpers holds each for its full deadline: past
  // this many their dirs wait for the next start (PruneLeftovers).
  if (waiting.size() >= kMaxWaitingDirs) {
    return LogWarning(job_dir(id) + " is left until the next start: " + who.user + " has " +
                      std::to_string(kMaxWaitingDirs) + " dirs waiting to be emptied");
  }
  waiting.push_back({.id = id, .who = who});
  if (waiting.size() == 1) EmptyNextDir(who.uid);
}

void ExecutorServer::EmptyNextDir(std::uint32_t uid) {
  // A dir that cannot be opened is done at once: the next is tried in this
  // loop rather than by recursion.
  for (auto& waiting = to_empty_.at(uid); !waiting.empty(); waiting.pop_front()) {
    const std::string path = job_dir(waiting.front().id);
    auto emptied = [path](std::optional<WireError> error) {
      if (::rmdir(path.c_str()) != 0 && errno != ENOENT) {
        // The helper's reason names a path the user chose: cut short.
        if (error && error->message.size() > kMaxOutputError)
          error->message.resize(kMaxOutputError);
        LogWarning(Error::FromErrno(errno, "remove " + path).message() +
                   (error ? " (" + error->message + ")" : "") + "; left for an admin");
      }
    };
    Result<UniqueFd> dir = OpenJobDir(path);
    if (!dir) {
      emptied(WireError::From(dir.error()));
      continue;
    }
    return AskLauncher<protocol::DeliverReply>(
        waiting.front(), {dir->get()}, kEmptyDirDeadline, "the launcher's emptying of " + path,
        [this, uid, emptied](Result<protocol::DeliverReply> reply) {
          emptied(reply ? reply->error : WireError::From(reply.error()));
          to_empty_.at(uid).pop_front();
          EmptyNextDir(uid);
        });
  }
  to_empty_.erase(uid);
}

std::optional<protocol::JobUsage> ExecutorServer::MeasureUsage(const LaunchSpec& spec,
                                                               const host::RunRecord* record,
                                                               double end_time) const {
  protocol::JobUsage usage;
  const double start = record && record->start_time > 0 ? record->start_time : spec.start_time;
  usage.wall_s = std::max(0.0, end_time - start);
  if (Result<protocol::JobUsage> counted = cgroups_.Usage(spec.id); counted) {
    counted->wall_s = usage.wall_s;
    return *counted;
  } else if (cgroups_.enabled()) {
    LogWarning(counted.error().message() + "; reporting what wait4 saw instead");
  }
  // The shepherd's wait4 of the job: its own and its reaped descendants'.
  if (!record || !record->end_time) return std::nullopt;
  usage.source = protocol::UsageSource::kRusage;
  usage.user_s = record->user_s;
  usage.system_s = record->system_s;
  usage.peak_memory_bytes =
      static_cast<std::uint64_t>(std::max<std::int64_t>(0, record->max_rss_kib)) * 1024;
  return usage;
}

Result<void> ExecutorServer::Save(LaunchSpec& spec, SpecStore::Flush flush) {
  Result<std::uint64_t> bytes = store_.Save(spec, flush);
  if (!bytes) {
    LogWarning("cannot save the spec of job " + std::to_string(spec.id) + ": " +
               bytes.error().message());
    return bytes.error();
  }
  never_saved_.erase(spec.id);
  usage_.Set(spec.id, spec.who.uid, BytesHeld(spec, *bytes));
  return Ok();
}

std::uint64_t ExecutorServer::BytesHeld(const LaunchSpec& spec, std::uint64_t spec_bytes) const {
  if (spec.state != SpecState::kExited) return spec_bytes;
  for (const char* name : {"output", "error"}) {
    Result<UniqueFd> buffer = OpenBuffer(spec, O_RDONLY, name);
    struct stat st {};
    // Blocks, not the size: a sparse buffer holds little of the disk.
    if (buffer && ::fstat(buffer->get(), &st) == 0) spec_bytes += st.st_blocks * 512;
  }
  return spec_bytes;
}

void ExecutorServer::RetryCgroupRemovals() {
  for (auto it = cgroups_to_remove_.begin(); it != cgroups_to_remove_.end();) {
    Result<void> removed = cgroups_.Remove(it->first);
    if (removed || std::chrono::steady_clock::now() > it->second) {
      if (!removed) LogWarning("job cgroup stays: " + removed.error().message());
      it = cgroups_to_remove_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace hpcb::executor

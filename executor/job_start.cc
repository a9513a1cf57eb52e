// Starting a registered job: its placement checked against the machine,
// its cgroup made, then the launcher's shepherd spawns it. The reply waits
// for the launcher; nothing else does.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "common/base/log.h"
#include "common/host/host_files.h"
#include "common/host/run_record.h"
#include "executor/executor_server.h"
#include "executor/job_cgroup.h"
#include "executor/job_env.h"
#include "executor/sysfacts.h"

namespace hpcb::executor {
namespace {

using protocol::Decode;
using protocol::Encode;
using protocol::SpecState;
using protocol::WireError;

// How long the launcher has to answer a spawn: well inside the broker's
// own deadline for the request it serves. The launcher bounds the spawn
// itself (a shorter deadline, after which it kills the shepherd and
// answers); this only catches a launcher that stopped answering at all.
constexpr std::chrono::milliseconds kSpawnDeadline{20000};

}  // namespace

void ExecutorServer::OnStart(std::uint64_t req, const std::string& text) {
  Result<protocol::StartJob> request = Decode<protocol::StartJob>(text);
  if (!request) return Refuse(req, 0, "start", request.error());
  BeginStart(*request, [this, req](protocol::StartReply reply) {
    reply.req = req;
    SendToBroker(Encode(reply));
  });
}

Result<void> ExecutorServer::ValidatePlacement(const protocol::StartJob& request) const {
  HPCB_TRY(CheckSubset(request.placement.cpus, facts_.cpus, "cpus"));
  HPCB_TRY(CheckSubset(request.placement.mems, facts_.nodes, "mems"));
  std::set<int> gpu_ids;
  for (int i = 0; i < facts_.gpu_count; ++i)
    gpu_ids.insert(i);
  HPCB_TRY(CheckSubset(request.placement.gpus, gpu_ids, "gpus"));
  if (cgroups_.enabled() && request.placement.mems.empty()) {
    return InvalidArgument("mems must name at least one NUMA node");
  }
  return Ok();
}

void ExecutorServer::BeginStart(const protocol::StartJob& request, StartDone done) {
  const std::uint64_t id = request.id;
  auto refuse = [&](const Error& error, bool logged = false) {
    if (!logged) LogWarning("refused start of job " + std::to_string(id) + ": " + error.message());
    done({.id = id, .error = WireError::From(error)});
  };
  // An array's element is made by its first start, once the checks below
  // have passed (a refused start leaves it unmade and its index unused).
  const bool new_element = request.array && PhaseOf(id) == JobPhase::kUnknown;
  if (Result<void> allowed = new_element ? CheckArrayElement(request)
                                         : CheckPhase(JobOperation::kStart, PhaseOf(id), id);
      !allowed) {
    return refuse(allowed.error());
  }
  // A run record without an end means a shepherd was given this job and
  // may yet start it (one a wedged launcher's spawn left behind), or one
  // that cannot be read says nothing either way: no job is started twice,
  // so it waits in the queue until the record is settled (a restart does).
  // An ended one is of an earlier try that was stopped: it goes.
  if (Result<host::RunRecord> record = host::LoadRunRecord(run_dir(), id);
      record ? !record->status : record.error().code() != ErrorCode::kNotFound) {
    return refuse(Error(ErrorCode::kUnavailable,
                        "job " + std::to_string(id) +
                            " may still be starting (its run record is not settled); it stays "
                            "queued"));
  } else if (record) {
    ::unlink(host::RunRecordPath(run_dir(), id).c_str());
  }
  if (Result<void> valid = ValidatePlacement(request); !valid) return refuse(valid.error());
  // Its records could not be kept, nor its output: it waits for room. One
  // line when the directory fills and one when it has room again, not one
  // per refused start.
  const bool full = StateDirNearlyFull();
  if (full != state_dir_full_) {
    state_dir_full_ = full;
    if (full) {
      LogWarning("the state directory " + config_.state_dir +
                 " is full: no job starts until there is room");
    } else {
      LogInfo("the state directory " + config_.state_dir + " has room again: jobs start");
    }
  }
  if (full) {
    return refuse(Error(ErrorCode::kUnavailable, "the state directory " + config_.state_dir +
                                                     " is full; the job stays queued"),
                  /*logged=*/true);
  }
  if (Result<void> made = new_element ? MakeArrayElement(request) : Ok(); !made) {
    return refuse(made.error());
  }
  LaunchSpec& spec = jobs_.at(id);
  if (!spec.array.empty()) return refuse(InvalidArgument("an array starts element by element"));
  in_flight_[id] = JobPhase::kStarting;
  Result<UniqueFd> cgroup_dir =
      cgroups_.Create(id, {request.placement.cpus, request.placement.mems, request.memory_max});
  if (!cgroup_dir) {
    // A populated leftover (someone else's processes) is never killed here.
    const bool someone_elses = cgroup_dir.error().code() == ErrorCode::kAlreadyExists;
    return FailStart(id, "failed to start job: " + cgroup_dir.error().message(), !someone_elses,
                     std::move(done));
  }
  // A queued job whose dir was lost (an fsck after a disk error, a clean-up
  // by hand) gets it back as at registration: its spec holds all it takes.
  if (::access(job_dir(id).c_str(), F_OK) != 0 && errno == ENOENT) {
    if (Result<void> made = MakeJobDir(spec, /*start_follows=*/true); !made) {
      return FailStart(id,
                       "failed to start job: its job directory was missing and cannot be made: " +
                           made.error().message(),
                       true, std::move(done));
    }
    LogWarning("the directory of job " + std::to_string(id) + " was missing; made it again");
  }
  Result<UniqueFd> buffer = OpenBuffer(spec, O_WRONLY | O_APPEND);
  // stderr's: the output buffer opened again (appending, so the two
  // interleave) unless --error gives it a buffer of its own.
  Result<UniqueFd> errors =
      OpenBuffer(spec, O_WRONLY | O_APPEND, spec.error_dest ? "error" : "output");
  if (!buffer || !errors) {
    const Error& why = !buffer ? buffer.error() : errors.error();
    return FailStart(id, "failed to start job: " + why.message(), true, std::move(done));
  }
  host::PasswdFacts who{spec.who.user, spec.home, spec.shell};
  protocol::SpawnRequest spawn;
  spawn.id = id;
  spawn.who = spec.who;
  spawn.argv = spec.argv;
  spawn.cwd = spec.cwd;
  spawn.env =
      BuildJobEnv(who, spec.env, id, request.placement.gpus, facts_.gpu_count > 0, facts_.lang);
  // Where it will run travels with the spawn: the shepherd writes it into
  // the run record before the job can run, so an executor that stops while
  // the job starts finds it there (job_recovery.cc), and a queued job's spec
  // is rewritten once, when the job runs, not also before. A job registered
  // by this same message has no spec on disk yet: that one is saved now,
  // placement and all, and is on disk before the registration is answered.
  spec.placement = request.placement;
  spawn.placement = request.placement;
  if (never_saved_.contains(id)) {
    if (Result<void> saved = Save(spec); !saved) {
      return FailStart(id, "failed to start job: cannot record it: " + saved.error().message(),
                       true, std::move(done));
    }
  }
  std::vector<int> fds{buffer->get(), errors->get()};
  if (cgroup_dir->valid()) fds.push_back(cgroup_dir->get());
  AskLauncher<protocol::SpawnReply>(
      std::move(spawn), fds, kSpawnDeadline, "the launcher's spawn",
      [this, id, request, done = std::move(done)](Result<protocol::SpawnReply> reply) mutable {
        OnSpawned(id, request, std::move(reply), std::move(done));
      });
}

void ExecutorServer::OnSpawned(std::uint64_t id, const protocol::StartJob& request,
                               Result<protocol::SpawnReply> reply, StartDone done) {
  in_flight_.erase(id);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) {
    // Cannot happen (a busy job is never forgotten); a job that did start
    // must not run unrecorded.
    if (reply && !reply->error && reply->pid > 1)
      (void)::kill(-static_cast<pid_t>(reply->pid), SIGKILL);
    return done(
        {.id = id,
         .error = WireError::From(Error(ErrorCode::kInternal, "the job vanished while starting"))});
  }
  if (!reply && reply.error().code() == ErrorCode::kUnavailable) {
    // The launcher is gone or wedged: the job did not start, and it is not
    // its fault. It stays registered for the broker to start again (a late
    // answer that says otherwise gets its job killed: OnLauncherMessage).
    LogWarning("job " + std::to_string(id) + " was not started: " + reply.error().message());
    (void)cgroups_.Remove(id);
    it->second.placement.reset();  // queued again: it holds nothing
    return done({.id = id,
                 .error = WireError::From(reply.error().WithContext("not started; still queued"))});
  }
  if (!reply)
    return FailStart(id, "failed to start job: " + reply.error().message(), true, std::move(done));
  if (reply->error) return FailStart(id, reply->error->message, true, std::move(done));
  LaunchSpec& spec = it->second;
  spec.state = SpecState::kRunning;
  spec.placement = request.placement;
  spec.pid = reply->pid;
  spec.shepherd = reply->shepherd;
  by_shepherd_[spec.shepherd] = id;
  spec.start_time = host::EpochNow();
  spec.env.clear();  // forwarded secrets are gone once the job runs
  spec.proc_start = host::ProcStartTime(static_cast<int>(spec.pid)).value_or(0);
  spec.shepherd_start = host::ProcStartTime(static_cast<int>(spec.shepherd)).value_or(0);
  // Saved for every job, with an environment to drop or not: the run
  // record's pid line is not flushed, so a power cut that found the spec
  // "registered" could start the job again (docs/security/open-issues.md),
  // and a damaged state directory that lost the record would (the spec
  // is then what names the running job).
  if (Result<void> saved = Save(spec); !saved) {
    // Running but unrecorded: after a restart nobody could find, limit or
    // account for it, so it does not run at all.
    (void)::kill(-static_cast<pid_t>(spec.pid), SIGKILL);
    (void)cgroups_.Kill(id);
    spec.state = SpecState::kRegistered;
    return FailStart(id,
                     "failed to start job: cannot record it as running: " + saved.error().message(),
                     true, std::move(done));
  }
  WriteInfo(spec);
  LogInfo("job " + std::to_string(id) + " started (pid " + std::to_string(spec.pid) +
          ", shepherd " + std::to_string(spec.shepherd) + ", cpus " +
          host::FormatIdList(request.placement.cpus) + ")");
  done({.id = id, .pid = spec.pid, .start_time = spec.start_time});
}

// By value: callers hand over a callback whose owner (a pending call) may go while it runs.
void ExecutorServer::FailStart(std::uint64_t id, const std::string& message, bool remove_cgroup,
                               StartDone done) {  // NOLINT(performance-unnecessary-value-param)
  in_flight_.erase(id);
  LaunchSpec& spec = jobs_.at(id);
  LogWarning("job " + std::to_string(id) + " " + message);
  AppendLine(spec, "hpc-batch: " + message);
  spec.state = SpecState::kExited;
  spec.env.clear();
  (void)Save(spec);
  if (remove_cgroup) (void)cgroups_.Remove(id);
  // The inspection link is for registered and running jobs, as Finish and
  // a restart (PruneLeftovers) leave it.
  if (!config_.no_dev_dir) ::unlink((config_.dev_dir + "/jobs/" + std::to_string(id)).c_str());
  done({.id = id, .error = WireError::From(Error(ErrorCode::kFailedPrecondition, message))});
  in_flight_[id] = JobPhase::kFinishing;
  DeliverOutput(spec, [this, id](const std::optional<std::string>& output_error) {
    in_flight_.erase(id);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return;
    it->second.output_error = output_error;
    it->second.end_time = host::EpochNow();
    (void)Save(it->second);
    WriteInfo(it->second);
    Notify(it->second, protocol::JobExited{.id = id});
    if (!output_error) return;
    // The broker has it as finished; this only adds why its output is not
    // where it should be.
    SendToBroker(Encode(protocol::JobExited{
        .id = id, .end_time = it->second.end_time, .output_error = output_error}));
  });
}

}  // namespace hpcb::executor

#include "broker/broker_core.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "broker/job_rules.h"
#include "protocol/base/log.h"
#include "protocol/base/units.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"

namespace hpcb::broker {
namespace {

std::string ErrorFrame(const Error& error) {
  return protocol::Encode(protocol::ErrorReply::From(error));
}

std::string Id(std::uint64_t id) { return std::to_string(id); }

}  // namespace

Result<void> BrokerCore::Start(QueueFile loaded) {
  next_id_ = std::max<std::uint64_t>(1, loaded.next_id);
  for (JobRecord& job : loaded.jobs) {
    next_id_ = std::max(next_id_, job.id + 1);
    job.holds_placement = false;
    if (job.running()) {
      scheduler_.Reserve(job.placement);
      job.holds_placement = true;
    }
    const std::uint64_t id = job.id;
    jobs_.emplace(id, std::move(job));
  }
  HPCB_ASSIGN_OR_RETURN(protocol::HelloReply hello, executor_.Hello());
  const std::set<std::uint64_t> running(hello.running.begin(), hello.running.end());
  const std::set<std::uint64_t> registered(hello.registered.begin(), hello.registered.end());
  // Ids the executor holds were handed out even if the queue file lost them.
  for (std::uint64_t id : running) next_id_ = std::max(next_id_, id + 1);
  for (std::uint64_t id : registered) next_id_ = std::max(next_id_, id + 1);
  for (std::uint64_t id : running) {
    if (jobs_.contains(id)) continue;
    // Started, then the queue write was lost: nothing here would enforce its
    // time limit or keep its cpus from being handed out again. It is
    // killed; its exit event then lets the executor forget it.
    LogWarning("job " + Id(id) + " is running but not in the queue file; killing it");
    Result<protocol::Ack> ack = executor_.Signal(protocol::SignalJob{id, "kill", "killed", 0});
    if (!ack) LogWarning("cannot kill job " + Id(id) + ": " + ack.error().message());
  }
  const double now = clock_.Now();
  std::size_t restored = 0;
  for (auto& [id, job] : jobs_) {
    if (job.running() && !running.contains(id)) {
      LogWarning("job " + Id(id) + " died while the broker was away");
      Finish(job, std::nullopt, now);
    } else if (job.queued() && !registered.contains(id)) {
      LogWarning("job " + Id(id) + " is not registered with the executor; dropping it");
      job.reason = "error";
      Finish(job, std::nullopt, now);
    } else if (job.queued()) {
      ++restored;
    }
  }
  for (std::uint64_t id : registered) {
    auto it = jobs_.find(id);
    if (it == jobs_.end() || it->second.done()) {
      Result<protocol::Ack> ack = executor_.Forget(id);
      if (!ack) LogWarning("cannot forget job " + Id(id) + ": " + ack.error().message());
    }
  }
  LogInfo("restored " + std::to_string(restored) + " queued job(s)");
  ApplyRetention();
  Schedule();
  // Always a compaction: it writes what reconciling changed and replaces
  // a journal that may end in a torn line.
  return Persist(/*compact=*/true);
}

std::optional<Response> BrokerCore::Handle(const Peer& peer, const std::string& text) {
  Result<std::string> cmd = protocol::PeekTag(text, "cmd");
  if (!cmd) return std::nullopt;
  Response response;
  Result<std::string> frame = Error(ErrorCode::kInternal, "internal daemon error");
  if (*cmd == "new") {
    frame = Submit(peer, text);
  } else if (*cmd == "list") {
    frame = List(peer, text);
  } else if (*cmd == "kill" || *cmd == "attach") {
    Result<protocol::JobIdRequest> request = protocol::Decode<protocol::JobIdRequest>(text);
    if (!request) {
      frame = request.error();
    } else if (*cmd == "kill") {
      frame = Kill(peer, request->id);
    } else {
      Result<JobRecord*> job = Lookup(peer, request->id);
      if (!job) {
        frame = job.error();
      } else {
        protocol::AttachReply reply{(*job)->state, (*job)->output_dest, (*job)->output_error};
        if (!(*job)->done()) response.attach = (*job)->id;
        frame = protocol::Encode(reply);
      }
    }
  } else if (*cmd == "job") {
    frame = Field(peer, text);
  } else {
    frame = InvalidArgument("unknown command '" + *cmd + "'");
  }
  response.frame = frame ? *frame : ErrorFrame(frame.error());
  if (!frame) response.attach.reset();
  return response;
}

Result<JobRecord*> BrokerCore::Lookup(const Peer& peer, std::uint64_t id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Error(ErrorCode::kNotFound, "no such job " + Id(id));
  HPCB_TRY(permissions_.OwnerOrAdmin(peer.uid, it->second));
  return &it->second;
}

Result<std::string> BrokerCore::Submit(const Peer& peer, const std::string& text) {
  if (options_.only_uid && peer.uid != *options_.only_uid) {
    return Error(ErrorCode::kPermissionDenied,
                 "daemon is not running as root; it can only run your own jobs");
  }
  HPCB_ASSIGN_OR_RETURN(protocol::SubmitRequest request,
                        protocol::Decode<protocol::SubmitRequest>(text));
  JobRecord job;
  job.demand.exclusive = request.exclusive;
  job.demand.cpu = request.cpu ? static_cast<int>(*request.cpu)
                               : (request.exclusive ? scheduler_.TotalCpus() : 1);
  job.demand.gpus = static_cast<int>(request.gpu_cores);
  job.demand.numa_local_mem = request.numa_local_mem;
  job.demand.numa_local_gpu = request.numa_local_gpu;
  job.demand.min_gpu_link = request.min_gpu_link;
  if (request.max_mem_gb) {
    job.max_mem_gb = request.max_mem_gb;
  } else {
    job.max_mem_gb = scheduler_.DefaultBudget(job.demand.cpu, job.demand.exclusive);
    job.mem_defaulted = job.max_mem_gb.has_value();
  }
  job.demand.mem_gib = job.max_mem_gb.value_or(0);
  HPCB_TRY(scheduler_.Validate(job.demand));
  job.max_time_s = std::min(request.max_time_s.value_or(options_.max_lifetime_s),
                            options_.max_lifetime_s);
  job.id = next_id_++;
  MarkChanged(job.id);
  // The executor reads argv, cwd, env and output from the connection
  // itself (the frame is still queued there; BrokerServer only peeked), so
  // what we keep below is a copy of the very bytes it stores. A job that
  // can start at once is started by the same message.
  protocol::RegisterJob registration{job.id};
  std::optional<broker::Start> placed = PlaceNewJob(job);
  if (placed) registration.start = StartRequest(job, placed->placement);
  Result<protocol::RegisterReply> registered = executor_.Register(registration, peer.fd);
  if (!registered || registered->error) {
    if (placed) scheduler_.Release(placed->placement);
    if (registered) return InvalidArgument(*registered->error);
    LogError("cannot register job " + Id(job.id) + ": " + registered.error().message());
    return Error(ErrorCode::kUnavailable, "the executor did not take the job: " +
                                              registered.error().message());
  }
  if (registered->uid != peer.uid) {
    if (placed) {
      scheduler_.Release(placed->placement);
      if (registered->start && !registered->start->error) {
        (void)executor_.Signal(protocol::SignalJob{job.id, "kill", "killed", job.max_time_s});
      }
    }
    (void)executor_.Forget(job.id);
    return Error(ErrorCode::kInternal, "the executor saw another uid on this connection");
  }
  job.user = registered->user;
  job.uid = registered->uid;
  job.gid = registered->gid;
  job.argv = std::move(request.argv);
  job.cwd = std::move(request.cwd);
  job.env = std::move(request.env);
  job.output_dest = registered->output_dest;
  job.submit_time = clock_.Now();
  const std::uint64_t id = job.id;
  JobRecord& stored_job = jobs_.emplace(id, std::move(job)).first->second;
  if (placed) {
    Result<protocol::StartReply> started =
        registered->start ? Result<protocol::StartReply>(*registered->start)
                          : Error(ErrorCode::kInternal, "the executor did not say whether it started");
    ApplyStart(stored_job, *placed, started, clock_.Now());
  }
  // The reply's copy: with --keep-finished 0 a job whose start failed is
  // dropped by the retention that Schedule() applies.
  JobRecord stored = stored_job;
  Schedule();
  if (auto it = jobs_.find(id); it != jobs_.end()) {
    stored = it->second;
  } else {
    stored.state = kDone;
  }
  if (Result<void> saved = Persist(); !saved && stored.queued()) {
    // An acknowledged job must survive a restart, and this one would not:
    // take it back, and the user still holds their only copy.
    Result<protocol::Ack> ack = executor_.Forget(id);
    if (!ack) LogWarning("cannot forget job " + Id(id) + ": " + ack.error().message());
    jobs_.erase(id);  // still in changed_: the next write records the removal
    return Error(ErrorCode::kUnavailable, "the queue could not be saved (" +
                                              saved.error().message() +
                                              "); the job was not submitted");
  }
  // A job that already started runs on: the executor holds it, and Persist
  // keeps its change until a later write (at the latest each Tick) lands.
  LogInfo("job " + Id(id) + " submitted by uid " + std::to_string(peer.uid));
  protocol::SubmitReply reply{id,
                              stored.state,
                              stored.max_time_s,
                              stored.demand.cpu,
                              stored.max_mem_gb,
                              stored.mem_defaulted,
                              stored.output_dest};
  return protocol::Encode(reply);
}

Result<std::string> BrokerCore::List(const Peer& peer, const std::string& text) {
  HPCB_ASSIGN_OR_RETURN(protocol::ListRequest request,
                        protocol::Decode<protocol::ListRequest>(text));
  if (request.all && !options_.list_is_public) {
    HPCB_TRY(permissions_.RequireAdmin(peer.uid, "list --all"));
  }
  protocol::ListReply reply;
  reply.now = clock_.Now();
  for (const auto& [id, job] : jobs_) {
    if (!request.all && job.uid != peer.uid) continue;
    if (!request.finished && job.done()) continue;
    reply.jobs.push_back(BuildRow(job, reply.now));
  }
  return protocol::Encode(reply);
}

Result<std::string> BrokerCore::Kill(const Peer& peer, std::uint64_t id) {
  HPCB_ASSIGN_OR_RETURN(JobRecord * job, Lookup(peer, id));
  const double now = clock_.Now();
  if (job->done()) {
    return Error(ErrorCode::kFailedPrecondition, "job " + Id(id) + " already finished");
  }
  if (job->queued()) {
    Result<protocol::Ack> ack = executor_.Forget(id);
    if (!ack) LogWarning("cannot forget job " + Id(id) + ": " + ack.error().message());
    job->reason = "killed";
    Finish(*job, std::nullopt, now);
    LogInfo("job " + Id(id) + " removed from the queue by uid " + std::to_string(peer.uid));
    ApplyRetention();
    Schedule();
    (void)Persist();
    return protocol::Encode(protocol::KillReply{"removed"});
  }
  if (!job->term_time) {
    // A repeated kill neither relabels a timeout nor postpones SIGKILL.
    job->reason = "killed";
    SendSignal(*job, "term", "killed");
    job->term_time = now;
    job->kill_at = now + kKillGraceS;
    MarkChanged(id);
    (void)Persist();
  }
  return protocol::Encode(protocol::KillReply{"killing"});
}

Result<std::string> BrokerCore::Field(const Peer& peer, const std::string& text) {
  HPCB_ASSIGN_OR_RETURN(protocol::JobFieldRequest request,
                        protocol::Decode<protocol::JobFieldRequest>(text));
  HPCB_ASSIGN_OR_RETURN(JobRecord * job, Lookup(peer, request.id));
  HPCB_ASSIGN_OR_RETURN(protocol::JobFieldReply reply,
                        ApplyJobField(*job, request, permissions_.IsAdmin(peer.uid),
                                      permissions_.admin_group()));
  if (reply.before) {
    LogInfo("job " + Id(job->id) + ": max-time changed from " + FormatDuration(*reply.before) +
            " to " + FormatDuration(reply.value) + " by uid " + std::to_string(peer.uid));
    MarkChanged(job->id);
    (void)Persist();
  }
  return protocol::Encode(reply);
}

void BrokerCore::CollectForScheduler(std::vector<QueuedJob>& queue,
                                     std::vector<RunningJob>& running) const {
  for (const auto& [id, job] : jobs_) {
    if (job.queued()) {
      queue.push_back({id, job.demand, job.max_time_s});
    } else if (job.running() && job.holds_placement) {
      running.push_back({id, job.placement,
                         job.start_time.value_or(0) + static_cast<double>(job.max_time_s)});
    }
  }
}

std::optional<broker::Start> BrokerCore::PlaceNewJob(const JobRecord& job) {
  std::vector<QueuedJob> queue;
  std::vector<RunningJob> running;
  CollectForScheduler(queue, running);
  queue.push_back({job.id, job.demand, job.max_time_s});
  std::optional<broker::Start> mine;
  const double now = clock_.Now();
  for (broker::Start& start : scheduler_.Schedule(queue, running, now)) {
    if (start.id == job.id) {
      mine = std::move(start);
      continue;
    }
    // An older job the same plan starts is started now, not released and
    // planned again: a stateful policy (easy-backfill's budget) would
    // count it twice.
    StartPlanned(start, now);
  }
  return mine;
}

protocol::StartJob BrokerCore::StartRequest(const JobRecord& job,
                                            const Placement& placement) const {
  protocol::StartJob request;
  request.id = job.id;
  request.cpus = placement.cpus;
  request.mems = placement.mems;
  request.gpus = placement.gpus;
  if (job.demand.mem_gib > 0) {
    request.memory_max =
        static_cast<std::uint64_t>(std::floor(job.demand.mem_gib * 1073741824.0));
  }
  return request;
}

void BrokerCore::ApplyStart(JobRecord& job, broker::Start& start,
                            const Result<protocol::StartReply>& reply, double now) {
  MarkChanged(job.id);
  if (!reply || reply->error) {
    scheduler_.Release(start.placement);
    const std::string why = !reply ? reply.error().message() : *reply->error;
    LogWarning("job " + Id(job.id) + " failed to start: " + why);
    job.reason = "error";
    if (reply) job.output_error = reply->output_error;
    Finish(job, std::nullopt, now);
    return;
  }
  job.state = kRunning;
  job.start_time = reply->start_time > 0 ? reply->start_time : now;
  job.placement = std::move(start.placement);
  job.holds_placement = true;
  job.env.clear();
  LogInfo("job " + Id(job.id) + " started (pid " + std::to_string(reply->pid) + ", cpus " +
          FormatCommaList(job.placement.cpus) + ", mem nodes " +
          FormatCommaList(job.placement.mems) + ")");
}

void BrokerCore::Schedule() {
  std::vector<QueuedJob> queue;
  std::vector<RunningJob> running;
  CollectForScheduler(queue, running);
  if (queue.empty()) return;
  const double now = clock_.Now();
  for (broker::Start& start : scheduler_.Schedule(queue, running, now)) StartPlanned(start, now);
  ApplyRetention();
}

void BrokerCore::StartPlanned(broker::Start& start, double now) {
  auto it = jobs_.find(start.id);
  if (it == jobs_.end() || !it->second.queued()) {
    scheduler_.Release(start.placement);
    return;
  }
  JobRecord& job = it->second;
  ApplyStart(job, start, executor_.Start(StartRequest(job, start.placement)), now);
}

void BrokerCore::SendSignal(JobRecord& job, const char* signal, const char* note) {
  protocol::SignalJob request{job.id, signal, note, job.max_time_s};
  Result<protocol::Ack> ack = executor_.Signal(request);
  if (!ack) {
    LogError("cannot signal job " + Id(job.id) + ": " + ack.error().message());
  } else if (ack->error) {
    LogWarning("signal to job " + Id(job.id) + " refused: " + *ack->error);
  }
}

void BrokerCore::CheckTimers() {
  const double now = clock_.Now();
  for (auto& [id, job] : jobs_) {
    if (!job.running()) continue;
    const double start = job.start_time.value_or(now);
    if (!job.term_time && now - start > static_cast<double>(job.max_time_s)) {
      LogInfo("job " + Id(id) + " exceeded its time limit (" + FormatDuration(job.max_time_s) +
              "); killing");
      job.reason = "timeout";
      SendSignal(job, "term", "timeout");
      job.term_time = now;
      job.kill_at = now + kKillGraceS;
      MarkChanged(id);
    } else if (job.kill_at && now >= *job.kill_at) {
      LogInfo("escalating to SIGKILL for job " + Id(id));
      SendSignal(job, "kill", "");
      job.kill_at = now + kKillGraceS;
      MarkChanged(id);
    }
  }
}

void BrokerCore::Finish(JobRecord& job, std::optional<std::int64_t> exit_code, double end_time) {
  job.state = kDone;
  job.end_time = end_time;
  job.exit_code = exit_code;
  job.kill_at.reset();
  job.env.clear();
  if (job.holds_placement) {
    scheduler_.Release(job.placement);
    job.holds_placement = false;
  }
  MarkChanged(job.id);
  std::string line = "job " + Id(job.id) + " finished (exit=" +
                     (exit_code ? std::to_string(*exit_code) : std::string("unknown"));
  if (job.reason) line += ", reason=" + *job.reason;
  LogInfo(line + ")");
}

void BrokerCore::OnExited(const protocol::JobExited& event) {
  auto it = jobs_.find(event.id);
  if (it == jobs_.end()) {
    // One killed at start-up for missing from the queue file (Start).
    LogWarning("exit event for job " + Id(event.id) + ", which is not in the queue; forgetting it");
    Result<protocol::Ack> ack = executor_.Forget(event.id);
    if (!ack) LogWarning("cannot forget job " + Id(event.id) + ": " + ack.error().message());
    return;
  }
  if (!it->second.running()) {
    LogWarning("exit event for job " + Id(event.id) + ", which is not running here");
    return;
  }
  JobRecord& job = it->second;
  if (event.oom && !job.reason) job.reason = "oom";
  job.output_error = event.output_error;
  Finish(job, event.exit_code, event.end_time > 0 ? event.end_time : clock_.Now());
  ApplyRetention();
}

void BrokerCore::ApplyRetention() {
  for (std::uint64_t id : RetentionVictims(jobs_, options_.keep_finished)) {
    Result<protocol::Ack> ack = executor_.Forget(id);
    if (!ack) LogWarning("cannot forget job " + Id(id) + ": " + ack.error().message());
    jobs_.erase(id);
    MarkChanged(id);
  }
}

void BrokerCore::Tick() {
  for (const protocol::JobExited& event : executor_.TakeEvents()) OnExited(event);
  CheckTimers();
  Schedule();
  // Exit events that arrived during the calls above are handled next tick.
  if (!changed_.empty()) (void)Persist();
}

const JobRecord* BrokerCore::Find(std::uint64_t id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

QueueFile BrokerCore::Snapshot() const {
  QueueFile file;
  file.next_id = next_id_;
  for (const auto& [id, job] : jobs_) file.jobs.push_back(job);
  return file;
}

Result<void> BrokerCore::Persist(bool compact) {
  if (store_ == nullptr) {
    changed_.clear();
    return Ok();
  }
  Result<void> saved = Ok();
  if (compact || store_->WantsCompaction()) {
    saved = store_->Save(Snapshot());
  } else if (!changed_.empty()) {
    std::vector<QueueChange> changes;
    changes.reserve(changed_.size());
    for (std::uint64_t id : changed_) {
      auto it = jobs_.find(id);
      changes.push_back({id, it == jobs_.end() ? nullptr : &it->second});
    }
    saved = store_->Append(next_id_, changes);
  }
  if (!saved) {
    // changed_ is kept; the store wants a compaction now, which the next
    // Persist (at the latest the next Tick) writes with everything.
    LogError("cannot write the queue file: " + saved.error().message());
    return saved;
  }
  changed_.clear();
  return Ok();
}

}  // namespace hpcb::broker

#include "broker/broker_core.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "broker/dependencies.h"
#include "broker/job_rules.h"
#include "broker/machine_info.h"
#include "common/base/log.h"
#include "common/units.h"
#include "protocol/array_spec.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "protocol/launcher_messages.h"

namespace hpcb::broker {
namespace {

using protocol::SignalKind;
using protocol::SignalNote;
using protocol::SpecState;

std::string ErrorFrame(const Error& error) {
  return protocol::Encode(protocol::ErrorReply::From(error));
}

std::string Id(std::uint64_t id) {
  return std::to_string(id);
}

// The count a folded array's row adds an element to (JobRow::array_counts).
const char* ArrayCountOf(const JobRecord& job) {
  if (job.done()) return "done";
  if (job.running()) return "running";
  return job.held ? "held" : "queued";
}

// Logs what the executor said to a call whose answer changes nothing here.
ExecutorChannel::Done<protocol::Ack> LogRefusal(std::string what) {
  return [what = std::move(what)](Result<protocol::Ack> ack) {
    if (!ack) {
      LogWarning(what + ": " + ack.error().message());
    } else if (ack->error) {
      LogWarning(what + " refused: " + ack->error->message);
    }
  };
}

}  // namespace

Result<void> BrokerCore::Start(QueueFile loaded) {
  next_id_ = std::max<std::uint64_t>(1, loaded.next_id);
  draining_ = loaded.draining;
  if (draining_) LogInfo("draining: no queued job is started until `dispatch resume`");
  for (JobRecord& job : loaded.jobs) {
    next_id_ = std::max(next_id_, job.id + 1);
    job.holds_placement = false;
    job.phase = JobPhase::kIdle;
    job.forget_unanswered = false;
    if (job.running()) {
      scheduler_.Reserve(job.placement);
      job.holds_placement = true;
    }
    const std::uint64_t id = job.id;
    jobs_.emplace(id, std::move(job));
  }
  HPCB_ASSIGN_OR_RETURN(protocol::HelloReply hello, executor_.Hello(options_.gpu_count));
  // Paged: the executor may hold any number of jobs.
  std::map<std::uint64_t, protocol::JobSummary> held;
  for (std::uint64_t after = 0;;) {
    HPCB_ASSIGN_OR_RETURN(protocol::ListJobsReply page,
                          executor_.ListJobs(after, protocol::ListJobs::kMaxLimit));
    for (protocol::JobSummary& summary : page.jobs) {
      after = std::max(after, summary.id);
      held.emplace(summary.id, std::move(summary));
    }
    if (!page.more || page.jobs.empty()) break;
  }
  // Ids the root side ever held were handed out, whatever the queue file says.
  next_id_ = std::max(next_id_, hello.next_id);
  if (!held.empty()) next_id_ = std::max(next_id_, held.rbegin()->first + 1);
  // The root side's records are the truth about what was accepted: a job
  // they hold that the queue file lost (damaged, deleted, a write that did
  // not land) is rebuilt from them, never killed or dropped.
  for (const auto& [id, summary] : held) {
    // An array has no record here: its elements are rebuilt after every
    // started one has been, from its own spec.
    if (!jobs_.contains(id) && summary.array.empty()) Rebuild(summary);
  }
  for (const auto& [id, summary] : held) {
    if (!summary.array.empty()) RebuildElements(summary, held);
  }
  const double now = clock_.Now();
  std::size_t restored = 0;
  for (auto& [id, job] : jobs_) {
    auto found = held.find(id);
    const std::optional<SpecState> there =
        found == held.end() ? std::nullopt : std::optional<SpecState>(found->second.state);
    job.on_executor = there.has_value();
    if (job.done()) continue;
    if (!there && job.queued() && job.array_id && held.contains(*job.array_id)) {
      ++array_unmade_[*job.array_id];  // made from the array's spec at its start
      ++restored;
      continue;
    }
    if (!there) {
      // Accepted, and the root side has no record of it: it cannot run.
      LogError("job " + Id(id) + " (" + job.user + ") has no launch spec on the root side; " +
               "it cannot run and is reported lost");
      job.reason = JobReason::kError;
      job.detail = "the root side lost this job's launch spec; it did not run";
      Finish(job, std::nullopt, now);
      continue;
    }
    const protocol::JobSummary& summary = found->second;
    if (job.running() && there != SpecState::kRunning) {
      LogInfo("job " + Id(id) + " ended while the broker was away");
      if (summary.oom && !job.reason) job.reason = JobReason::kOom;
      job.output_error = summary.output_error;
      job.usage = summary.usage;
      Finish(job, summary.exit_code, summary.end_time > 0 ? summary.end_time : now);
    } else if (job.queued() && there == SpecState::kRunning) {
      // It started, and the queue write saying so was lost.
      job.state = JobState::kRunning;
      job.start_time = summary.start_time;
      if (summary.placement) {
        static_cast<protocol::PlacementRecord&>(job.placement) = *summary.placement;
        scheduler_.Reserve(job.placement);
        job.holds_placement = true;
      }
      MarkChanged(id);
    } else if (job.queued() && there == SpecState::kExited) {
      if (summary.oom && !job.reason) job.reason = JobReason::kOom;
      if (!summary.exit_code && !job.reason) job.reason = JobReason::kError;
      job.output_error = summary.output_error;
      job.usage = summary.usage;
      Finish(job, summary.exit_code, summary.end_time > 0 ? summary.end_time : now);
    } else if (job.queued()) {
      ++restored;
    }
  }
  for (const auto& [id, summary] : held) {
    if (summary.state == SpecState::kRunning || array_unmade_.contains(id)) continue;
    auto it = jobs_.find(id);
    if (it != jobs_.end()) continue;
    if (!summary.array.empty()) {
      LogWarning("array " + Id(id) + " has no unstarted element in the queue file; its launch " +
                 "spec is forgotten");
      ForgetArray(id);
      continue;
    }
    ForgetOnExecutor(id);
  }
  LogInfo("restored " + std::to_string(restored) + " queued job(s)");
  // Kept outputs are tried again soon after a restart (the place may be
  // back, or the size limit raised), then on the usual back-off.
  constexpr double kRetryAfterRestartS = 5;
  for (const auto& [id, job] : jobs_) {
    if (job.done() && job.output_error && job.output_dest) {
      output_retries_.AfterStart(id, clock_.Now(), kRetryAfterRestartS);
    }
  }
  unfinished_from_ = 0;  // rebuilt jobs may lie below any mark
  touched_.All();
  ApplyRetention();
  Schedule();
  // Always a compaction: it writes what reconciling changed and replaces
  // a journal that may end in a torn line.
  return Persist(/*compact=*/true);
}

void BrokerCore::Handle(const Peer& peer, const std::string& text, Respond respond) {
  Result<std::string> tag = protocol::PeekCommand(text);
  if (!tag) return respond(Response{});
  auto answer = [&](const Result<std::string>& frame) {
    respond(Response{frame ? *frame : ErrorFrame(frame.error()), std::nullopt});
  };
  std::optional<protocol::ClientCommand> command =
      protocol::FromName<protocol::ClientCommand>(*tag);
  if (!command) return answer(InvalidArgument("unknown command '" + tag->substr(0, 40) + "'"));
  switch (*command) {
    case protocol::ClientCommand::kNew:
      return Submit(peer, text, std::move(respond));
    case protocol::ClientCommand::kList: {
      Response response;
      Result<std::string> frame = List(peer, text, response);
      if (!frame) return answer(frame.error());
      response.frame = std::move(*frame);
      return respond(std::move(response));
    }
    case protocol::ClientCommand::kKill:
    case protocol::ClientCommand::kAttach:
    case protocol::ClientCommand::kHold:
    case protocol::ClientCommand::kRelease: {
      Result<protocol::JobIdRequest> request = protocol::Decode<protocol::JobIdRequest>(text);
      if (!request) return answer(request.error());
      if (*command == protocol::ClientCommand::kKill) {
        return Kill(peer, request->id, std::move(respond));
      }
      if (*command != protocol::ClientCommand::kAttach) {
        return Hold(peer, request->id, *command == protocol::ClientCommand::kHold,
                    std::move(respond));
      }
      Response response;
      Result<std::string> frame = Attach(peer, request->id, response);
      if (!frame) return answer(frame.error());
      response.frame = *frame;
      return respond(std::move(response));
    }
    case protocol::ClientCommand::kJob:
      return Field(peer, text, std::move(respond));
    case protocol::ClientCommand::kOutput:
      return Output(peer, text, std::move(respond));
    case protocol::ClientCommand::kInfo:
    case protocol::ClientCommand::kDrain:
    case protocol::ClientCommand::kResume: {
      Result<protocol::BareRequest> request = protocol::Decode<protocol::BareRequest>(text);
      if (!request) return answer(request.error());
      if (*command == protocol::ClientCommand::kInfo) return answer(Info());
      return SetDraining(peer, *command == protocol::ClientCommand::kDrain, std::move(respond));
    }
  }
}

std::string BrokerCore::Info() const {
  protocol::InfoReply reply;
  reply.policy = options_.policy;
  reply.draining = draining_;
  std::vector<const Placement*> held;
  for (const auto& [id, job] : jobs_) {
    if (job.holds_placement) held.push_back(&job.placement);
    if (job.running() || (job.queued() && job.holds_placement)) {
      ++reply.running;
    } else if (job.queued() && job.phase != JobPhase::kRegistering) {
      ++reply.queued;
      if (CheckDependencies(job, jobs_).state != DependencyState::kMet) ++reply.waiting;
    }
  }
  DescribeMachine(scheduler_.machine(), held, reply);
  return protocol::Encode(reply);
}

void BrokerCore::SetDraining(const Peer& peer, bool on, Respond respond) {
  Result<void> allowed = permissions_.RequireAdmin(peer.uid, on ? "drain" : "resume");
  if (!allowed) return respond(Response{ErrorFrame(allowed.error()), std::nullopt});
  protocol::DrainReply reply{on, draining_ != on};
  if (!reply.changed) return respond(Response{protocol::Encode(reply), std::nullopt});
  draining_ = on;
  draining_unsaved_ = true;
  LogInfo(std::string(on ? "draining: no queued job is started from now on"
                         : "resumed: queued jobs are started again") +
          " (uid " + std::to_string(peer.uid) + ")");
  AnswerWhenWritten(std::move(respond), Response{protocol::Encode(reply), std::nullopt},
                    [this, on](const Error& error) -> Response {
                      // Not on disk: a restart would forget it, so it is undone.
                      draining_ = !on;
                      draining_unsaved_ = true;
                      return Response{ErrorFrame(Error(ErrorCode::kUnavailable,
                                                       "the queue could not be saved (" +
                                                           error.message() + "); nothing changed")),
                                      std::nullopt};
                    });
  if (!on) Schedule();
}

Result<std::vector<std::uint64_t>> BrokerCore::CheckAfter(
    const Peer& peer, const std::vector<std::uint64_t>& after) const {
  std::vector<std::uint64_t> ids;
  for (std::uint64_t asked : after) {
    // An array stands for every element (all must end, as Slurm's afterok).
    std::vector<std::uint64_t> each = ElementsOf(asked);
    if (jobs_.contains(asked) || each.empty()) each = {asked};
    for (std::uint64_t id : each) {
      if (std::find(ids.begin(), ids.end(), id) != ids.end()) continue;
      auto it = jobs_.find(id);
      if (it == jobs_.end() || it->second.phase == JobPhase::kRegistering) {
        return Error(ErrorCode::kNotFound, "--after: no such job " + Id(id));
      }
      if (!options_.list_is_public) {
        Result<void> visible = permissions_.OwnerOrAdmin(peer.uid, it->second);
        if (!visible) {
          return Error(ErrorCode::kPermissionDenied, "--after: " + visible.error().message());
        }
      }
      ids.push_back(id);
    }
  }
  return ids;
}

void BrokerCore::ResolveDependencies() {
  if (!DependenciesDue()) return;
  const double now = clock_.Now();
  bool ended = false;
  for (auto it = FirstUnfinished(); it != jobs_.end(); ++it) {
    const std::uint64_t id = it->first;
    JobRecord& job = it->second;
    if (!job.queued() || job.after.empty() || job.phase != JobPhase::kIdle || job.holds_placement) {
      continue;
    }
    DependencyCheck check = CheckDependencies(job, jobs_);
    if (check.state != DependencyState::kFailed) continue;
    ForgetOnExecutor(id);
    job.reason = JobReason::kDependency;
    job.detail = check.why + ", so it did not run";
    LogInfo("job " + Id(id) + " will not run: " + check.why);
    Finish(job, std::nullopt, now);
    ended = true;
  }
  if (ended) ApplyRetention();
}

Result<JobRecord*> BrokerCore::Lookup(const Peer& peer, std::uint64_t id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.phase == JobPhase::kRegistering) {
    return Error(ErrorCode::kNotFound, "no such job " + Id(id));
  }
  HPCB_TRY(permissions_.OwnerOrAdmin(peer.uid, it->second));
  return &it->second;
}

void BrokerCore::AnswerWhenWritten(Respond respond, Response response,
                                   std::function<Response(const Error&)> if_lost) {
  awaiting_write_.push_back({std::move(respond), std::move(response), std::move(if_lost)});
}

std::size_t BrokerCore::QueuedJobsOf(uid_t uid) {
  auto recount = [this](std::uint64_t id) {
    auto it = jobs_.find(id);
    const bool queued = it != jobs_.end() && it->second.queued();
    auto counted = counted_queued_.find(id);
    if (counted != counted_queued_.end() && (!queued || counted->second != it->second.uid)) {
      --queued_count_[counted->second];
      counted_queued_.erase(counted);
      counted = counted_queued_.end();
    }
    if (queued && counted == counted_queued_.end()) {
      ++queued_count_[it->second.uid];
      counted_queued_.emplace(id, it->second.uid);
    }
  };
  if (touched_.counts_all) {
    touched_.counts_all = false;
    touched_.for_counts.clear();
    queued_count_.clear();
    counted_queued_.clear();
    for (const auto& [id, job] : jobs_)
      recount(id);
  }
  for (std::uint64_t id : touched_.for_counts)
    recount(id);
  touched_.for_counts.clear();
  return queued_count_[uid];
}

bool BrokerCore::WaitsForDependencies(const JobRecord& job) const {
  return job.queued() && !job.holds_placement && !job.after.empty() &&
         CheckDependencies(job, jobs_).state == DependencyState::kWaiting;
}

bool BrokerCore::PassDue(bool& all, std::set<std::uint64_t>& touched,
                         const std::function<bool(const JobRecord*)>& matters) const {
  bool due = all;
  for (auto id = touched.begin(); !due && id != touched.end(); ++id) {
    auto it = jobs_.find(*id);
    due = matters(it == jobs_.end() ? nullptr : &it->second);
  }
  all = false;
  touched.clear();
  return due;
}

bool BrokerCore::RetentionDue() {
  // A job that ended or went, or a dependent that left the queue (what it
  // waited for may go now); a new queued job only keeps others.
  return PassDue(touched_.retention_all, touched_.for_retention, [](const JobRecord* job) {
    return job == nullptr || job->done() || (!job->queued() && !job->after.empty());
  });
}

bool BrokerCore::DependenciesDue() {
  // A job that ended or went decides its dependents; a new dependent whose
  // dependency already failed is decided now.
  return PassDue(touched_.dependencies_all, touched_.for_dependencies,
                 [this](const JobRecord* job) {
                   return job == nullptr || job->done() ||
                          (job->queued() && !job->after.empty() &&
                           CheckDependencies(*job, jobs_).state == DependencyState::kFailed);
                 });
}

Result<JobRecord> BrokerCore::RecordFor(std::uint64_t id,
                                        const protocol::JobRequest& request) const {
  JobRecord job;
  job.id = id;
  job.demand.exclusive = request.exclusive;
  job.demand.gpus = static_cast<int>(request.gpu_cores);
  job.demand.numa_local_mem = request.numa_local_mem;
  job.demand.numa_local_gpu = request.numa_local_gpu;
  job.demand.cpu = request.cpu ? static_cast<int>(*request.cpu)
                               : (request.exclusive ? scheduler_.ExclusiveCpus(job.demand) : 1);
  job.demand.min_gpu_link = request.min_gpu_link;
  if (request.max_mem_gb) {
    job.max_mem_gb = request.max_mem_gb;
  } else {
    job.max_mem_gb = scheduler_.DefaultBudget(job.demand.cpu, job.demand.exclusive);
    job.mem_defaulted = job.max_mem_gb.has_value();
  }
  job.demand.mem_gib = job.max_mem_gb.value_or(0);
  HPCB_TRY(scheduler_.Validate(job.demand));
  job.max_time_s =
      std::min(request.max_time_s.value_or(options_.max_lifetime_s), options_.max_lifetime_s);
  job.submit_time = request.submit_time;
  return job;
}

void BrokerCore::Rebuild(const protocol::JobSummary& summary, std::optional<ElementOf> element) {
  const std::uint64_t id = summary.id;
  Result<JobRecord> made = RecordFor(id, summary.request);
  JobRecord job = made ? std::move(*made) : JobRecord{};
  job.id = id;
  job.uid = summary.who.uid;
  job.gid = summary.who.gid;
  job.user = permissions_.NameOf(summary.who.uid);
  job.argv = summary.argv;
  job.name = summary.name;
  job.cwd = summary.cwd;
  job.output_dest = summary.output_dest;
  job.error_dest = summary.error_dest;
  job.submit_time = summary.request.submit_time;
  if (element) {
    job.array_id = element->array;
    job.array_index = element->index;
  }
  if (!made) {
    // It no longer fits this machine (the daemon's flags changed): it is
    // kept and reported, never run on a placement it cannot have.
    job.reason = JobReason::kError;
    job.detail = "it no longer fits this machine: " + made.error().message();
  }
  switch (summary.state) {
    case SpecState::kRegistered:
      if (made) break;
      job.state = JobState::kDone;
      job.end_time = clock_.Now();
      if (!element) ForgetOnExecutor(id);  // an element's is its array's
      break;
    case SpecState::kRunning:
      job.state = JobState::kRunning;
      job.start_time = summary.start_time;
      if (summary.placement) {
        static_cast<protocol::PlacementRecord&>(job.placement) = *summary.placement;
        job.placement.exclusive = job.demand.exclusive;
        scheduler_.Reserve(job.placement);
        job.holds_placement = true;
      }
      break;
    case SpecState::kExited:
      job.state = JobState::kDone;
      job.start_time =
          summary.start_time > 0 ? std::optional<double>(summary.start_time) : std::nullopt;
      job.end_time = summary.end_time;
      job.exit_code = summary.exit_code;
      if (summary.oom) job.reason = JobReason::kOom;
      job.output_error = summary.output_error;
      job.usage = summary.usage;
      break;
  }
  if (!element) {
    LogWarning("job " + Id(id) + " (" + job.user + ") was missing from the queue file; rebuilt " +
               "from the root side's record as " + std::string(protocol::NameOf(job.state)));
  }
  MarkChanged(id);
  jobs_.emplace(id, std::move(job));
}

void BrokerCore::Submit(const Peer& peer, const std::string& text, Respond respond) {
  auto refuse = [&](const Error& error) { respond(Response{ErrorFrame(error), std::nullopt}); };
  if (options_.only_uid && peer.uid != *options_.only_uid) {
    return refuse(Error(ErrorCode::kPermissionDenied,
                        "daemon is not running as root; it can only run your own jobs"));
  }
  if (executor_.backed_up()) {
    return refuse(Error(ErrorCode::kUnavailable,
                        "the daemon is busy (too much is waiting for the executor); "
                        "try again in a moment"));
  }
  Result<protocol::SubmitRequest> request = protocol::Decode<protocol::SubmitRequest>(text);
  if (!request) return refuse(request.error());
  // Checked here, not by the root side: the executor reads this same frame
  // only once the broker has accepted it.
  if (Result<void> named = request->name ? protocol::CheckJobName(*request->name) : Ok(); !named) {
    return refuse(named.error().WithContext("field 'name'"));
  }
  // dispatch refuses --error with --no-output; a hand-made frame is refused
  // here, or its stderr, once undeliverable, would have nothing to retry by.
  if (request->error && !request->output) {
    return refuse(
        InvalidArgument("field 'error': stderr apart needs an output file too "
                        "(--error cannot be combined with --no-output)"));
  }
  if (Result<void> array = protocol::CheckArray(request->array, request->array_throttle); !array) {
    return refuse(array.error().WithContext("field 'array'"));
  }
  // As dispatch checks: each element names its own files in a directory;
  // one file for all of them would keep only the last element's.
  if (!request->array.empty() && ((request->output && !request->output_is_dir) ||
                                  (request->error && !request->error_is_dir))) {
    return refuse(
        InvalidArgument("field 'array': an array's --output and --error must name directories"));
  }
  // The cap counts an array's elements, each a queued job.
  const std::size_t queued = QueuedJobsOf(peer.uid);
  const std::size_t adding = std::max<std::size_t>(1, request->array.size());
  if (static_cast<std::int64_t>(queued + adding) > options_.max_queued_per_user) {
    if (!request->array.empty()) {
      return refuse(Error(ErrorCode::kResourceExhausted,
                          "you have " + std::to_string(queued) +
                              " queued jobs and this array has " + std::to_string(adding) +
                              " elements, more than the " +
                              std::to_string(options_.max_queued_per_user) +
                              " one user may have queued (--max-queued-per-user); submit a "
                              "smaller array, or more once some have started"));
    }
    return refuse(Error(ErrorCode::kResourceExhausted,
                        "you have " + std::to_string(queued) +
                            " queued jobs, the most one user may have (--max-queued-per-user); "
                            "submit more once some have started"));
  }
  Result<std::vector<std::uint64_t>> after = CheckAfter(peer, request->after);
  if (!after) return refuse(after.error());
  Result<JobRecord> made = RecordFor(next_id_, protocol::JobRequest{*request, clock_.Now()});
  if (!made) return refuse(made.error());
  JobRecord job = std::move(*made);
  job.after = std::move(*after);
  job.after_any = request->after_any;
  job.name = request->name;
  job.id = next_id_++;
  next_id_ += request->array.size();  // an array's elements take the ids after it
  job.uid = peer.uid;
  job.submit_time = clock_.Now();
  job.phase = JobPhase::kRegistering;
  const std::uint64_t id = job.id;
  // In the queue from now on, so later submissions wait behind it, but not
  // listed, persisted or startable until the executor has registered it.
  JobRecord& stored = jobs_.emplace(id, std::move(job)).first->second;
  touched_.Note(id);
  // The executor reads argv, cwd, env and output from the connection
  // itself (the frame is still queued there; BrokerServer only peeked). A
  // job that can start at once is started by the same message; one that
  // waits for another, or a drained machine, costs no pass over the queue.
  protocol::RegisterJob registration;
  registration.id = id;
  if (!request->exec_error && request->array.empty() && !WaitsForDependencies(stored) &&
      !draining_ && scheduler_.FitsNow(stored.demand)) {
    if (std::optional<broker::Start> placed = PlaceNewJob(stored)) {
      registration.start = StartRequest(stored, placed->placement);
      stored.placement = std::move(placed->placement);
      stored.holds_placement = true;
    }
  }
  executor_.Register(
      std::move(registration), peer.fd,
      [this, id, request = std::move(*request),
       respond = std::move(respond)](Result<protocol::RegisterReply> reply) mutable {
        CompleteSubmit(id, std::move(request), std::move(reply), std::move(respond));
      },
      [this, id](const Result<protocol::StartReply>& reply) { OnStartReply(id, reply); });
}

void BrokerCore::CompleteSubmit(std::uint64_t id, protocol::SubmitRequest request,
                                Result<protocol::RegisterReply> reply, Respond respond) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) {
    return respond(Response{ErrorFrame(Error(ErrorCode::kInternal, "the job vanished")), {}});
  }
  JobRecord& job = it->second;
  job.phase = JobPhase::kIdle;
  const bool start_ended = job.holds_placement && reply && reply->start.has_value();
  const bool start_under_way = job.holds_placement && reply && !reply->error && reply->starting;
  auto fail = [&](const Error& error) {
    if (job.holds_placement) scheduler_.Release(job.placement);
    jobs_.erase(it);
    MarkChanged(id);  // journals the removal, and with it next_id
    respond(Response{ErrorFrame(error), std::nullopt});
    Schedule();
  };
  if (!reply) {
    // No answer in time: the user is told it was not submitted, and the
    // executor is made to agree (a registration that did happen is dropped,
    // a start that did happen is killed and dropped when it ends).
    LogError("cannot register job " + Id(id) + ": " + reply.error().message());
    executor_.Signal(protocol::SignalJob{0, id, SignalKind::kKill, SignalNote::kKilled, 0},
                     [](const Result<protocol::Ack>&) {});
    ForgetOnExecutor(id);
    return fail(Error(ErrorCode::kUnavailable, "the executor did not take the job (" +
                                                   reply.error().message() +
                                                   "); it was not submitted"));
  }
  if (reply->error) return fail(reply->error->ToError());
  if (reply->uid != job.uid) {
    if (start_under_way || (reply->start && !reply->start->error)) {
      executor_.Signal(protocol::SignalJob{0, id, SignalKind::kKill, SignalNote::kKilled, 0},
                       LogRefusal("killing job " + Id(id)));
    }
    ForgetOnExecutor(id);
    return fail(Error(ErrorCode::kInternal, "the executor saw another uid on this connection"));
  }
  job.user = permissions_.NameOf(job.uid);
  job.gid = reply->gid;
  job.argv = std::move(request.argv);
  job.cwd = std::move(request.cwd);
  job.output_dest = reply->output_dest;
  // Named as the root side names it (its launch spec, and JobSummary).
  if (request.error) {
    job.error_dest =
        protocol::ResolveDestination(*request.error, request.error_is_dir, id, "error");
  }
  if (request.exec_error) return FailUnrunnable(job, *request.exec_error, std::move(respond));
  if (!request.array.empty()) return ExpandArray(job, request, std::move(respond));
  // Its launch spec is on disk and holds all of it but its dependencies.
  MarkChanged(id, job.after.empty() ? Held::kAlsoOnRootSide : Held::kOnlyHere);
  // The reply is built before the start is applied: a start that failed
  // finishes the job, and retention may drop its record (and `job` with it)
  // at once.
  broker::CpuGrant grant = scheduler_.Grant(job.demand);
  protocol::SubmitReply answer{id,
                               job.state,
                               job.max_time_s,
                               job.demand.cpu,
                               job.max_mem_gb,
                               job.mem_defaulted,
                               job.output_dest,
                               grant.cpus,
                               grant.cores};
  answer.draining = draining_ && job.queued();
  const std::uint32_t uid = job.uid;
  if (start_ended) {
    ApplyStart(job, *reply->start);
  } else if (start_under_way) {
    job.phase = JobPhase::kStarting;  // OnStartReply completes it
  } else if (job.holds_placement) {
    SendStart(job);  // the policy placed it while it was registering
  }
  if (auto kept = jobs_.find(id); kept == jobs_.end()) {
    answer.state = JobState::kDone;
  } else {
    const JobRecord& now = kept->second;
    // A job whose start is under way holds its cpus and its spawn is
    // running: it is told as running, as the original tool does for a job
    // it launched. A spawn that then fails ends it in error, as a job that
    // dies at once would.
    answer.state = start_under_way && SpawnUnderWay(now) ? JobState::kRunning : now.state;
    if (now.holds_placement && now.placement.cores > 0) {
      answer.granted_cpus = static_cast<int>(now.placement.cpus.size());
      answer.granted_cores = now.placement.cores;
    }
  }
  LogInfo("job " + Id(id) + " submitted by uid " + std::to_string(uid));
  AnswerWhenWritten(std::move(respond), Response{protocol::Encode(answer), std::nullopt},
                    [this, id](const Error& error) -> Response {
                      auto found = jobs_.find(id);
                      if (found == jobs_.end() || !found->second.queued() ||
                          found->second.phase != JobPhase::kIdle) {
                        // It started: the executor holds it, and a later
                        // write (at the latest each Tick) records it.
                        return Response{};
                      }
                      // An acknowledged job must survive a restart, and this
                      // one would not: take it back; the user still holds
                      // their only copy.
                      ForgetOnExecutor(id);
                      if (found->second.holds_placement)
                        scheduler_.Release(found->second.placement);
                      jobs_.erase(found);
                      MarkChanged(id);
                      return Response{
                          ErrorFrame(Error(ErrorCode::kUnavailable,
                                           "the queue could not be saved (" + error.message() +
                                               "); the job was not submitted")),
                          std::nullopt};
                    });
  // A job that waits for another, or does not fit in what is free,
  // changed nothing a pass could act on.
  if (auto kept = jobs_.find(id);
      kept == jobs_.end() || !kept->second.queued() || kept->second.holds_placement ||
      (!WaitsForDependencies(kept->second) && scheduler_.FitsNow(kept->second.demand))) {
    Schedule();
  }
}

void BrokerCore::FailUnrunnable(JobRecord& job, const std::string& why, Respond respond) {
  // It had to be registered all the same: its id is then the root side's
  // too, and never handed out again. Nothing else of it stays there.
  ForgetOnExecutor(job.id);
  job.output_dest.reset();
  job.reason = JobReason::kError;
  job.detail = "failed to start: " + why;
  protocol::SubmitReply answer;
  answer.id = job.id;
  answer.state = JobState::kDone;
  answer.max_time_s = job.max_time_s;
  answer.cpu = job.demand.cpu;
  answer.start_error = why;
  LogInfo("job " + Id(job.id) + " of uid " + std::to_string(job.uid) + " failed to start: " + why);
  Finish(job, std::nullopt, clock_.Now());
  AnswerWhenWritten(std::move(respond), Response{protocol::Encode(answer), std::nullopt});
  ApplyRetention();
  Schedule();
}

Result<std::string> BrokerCore::List(const Peer& peer, const std::string& text,
                                     Response& response) {
  HPCB_ASSIGN_OR_RETURN(protocol::ListRequest request,
                        protocol::Decode<protocol::ListRequest>(text));
  if (request.all && !options_.list_is_public) {
    HPCB_TRY(permissions_.RequireAdmin(peer.uid, "list --all"));
  }
  // A job asked for by id that is another user's is named as theirs, as
  // kill and attach name it (wait asks this way), unless every list is
  // public anyway.
  if (!request.all && !options_.list_is_public) {
    for (std::uint64_t id : request.ids) {
      auto job = jobs_.find(id);
      if (job == jobs_.end() || job->second.phase == JobPhase::kRegistering) continue;
      HPCB_TRY(permissions_.OwnerOrAdmin(peer.uid, job->second));
    }
  }
  ListCursor cursor{std::move(request), peer.uid, 0, 0};
  bool more = false;
  std::string page = ListPage(cursor, &more);
  if (more) response.list = std::move(cursor);
  return page;
}

std::string BrokerCore::ListPage(ListCursor& cursor, bool* more) {
  protocol::ListReply reply;
  reply.now = clock_.Now();
  reply.draining = draining_;
  const std::set<std::uint64_t> only(cursor.request.ids.begin(), cursor.request.ids.end());
  // Folding: each folded row's place in the page and its elements' indices.
  std::vector<std::pair<std::size_t, std::vector<std::uint32_t>>> folds;
  std::size_t bytes = 0;
  for (auto it = jobs_.upper_bound(cursor.after); it != jobs_.end(); ++it) {
    const auto& [id, job] = *it;
    if (bytes >= kListPageBytes) {
      reply.more = true;
      break;
    }
    cursor.after = id;
    if (job.phase == JobPhase::kRegistering || job.phase == JobPhase::kForgetting) continue;
    if (!only.empty() && !only.contains(id) && !(job.array_id && only.contains(*job.array_id))) {
      continue;
    }
    if (!cursor.request.all && job.uid != cursor.uid) continue;
    if (!cursor.request.finished && job.done()) continue;
    if (cursor.request.name && job.name != cursor.request.name) continue;
    const bool fold = cursor.request.fold_arrays && job.array_id;
    if (fold && !folds.empty() && folds.back().first + 1 == reply.jobs.size() &&
        reply.jobs.back().array_id == job.array_id) {
      folds.back().second.push_back(job.array_index);
      ++reply.jobs.back().array_counts[ArrayCountOf(job)];
      continue;
    }
    if (fold) folds.push_back({reply.jobs.size(), {job.array_index}});
    // An estimate, so a row is encoded once: its strings and a margin.
    bytes += 400 + job.cwd.size() + job.user.size() + job.output_dest.value_or("").size() +
             job.error_dest.value_or("").size();
    for (const std::string& arg : job.argv)
      bytes += arg.size() + 4;
    reply.jobs.push_back(BuildRow(job, reply.now));
    if (fold) reply.jobs.back().array_counts[ArrayCountOf(job)] = 1;
  }
  for (auto& [place, indices] : folds)
    reply.jobs[place].array_indices = protocol::FormatIndices(indices);
  std::string page = protocol::Encode(reply);
  cursor.sent += page.size();
  if (reply.more && cursor.sent > kMaxListBytes) {
    reply.more = false;
    page = ErrorFrame(Error(ErrorCode::kResourceExhausted,
                            "the list is over " + std::to_string(kMaxListBytes >> 20) +
                                " MiB, the most one answer may hold; ask for fewer jobs "
                                "(without --finished or --all, or by id)"));
  }
  *more = reply.more;
  return page;
}

Result<std::string> BrokerCore::Attach(const Peer& peer, std::uint64_t id, Response& response) {
  if (!jobs_.contains(id)) {
    HPCB_ASSIGN_OR_RETURN(id, ElementToAttach(peer, id));
  }
  HPCB_ASSIGN_OR_RETURN(JobRecord * job, Lookup(peer, id));
  if (job->done() && job->reason == JobReason::kDependency) {
    // It never ran, so there is no output to point at.
    return Error(ErrorCode::kFailedPrecondition,
                 "job " + Id(id) + ": " + job->detail.value_or("a dependency failed"));
  }
  // Placed with its spawn under way, it is running to its owner, as the
  // answer to its `new` said (CompleteSubmit).
  protocol::AttachReply reply{SpawnUnderWay(*job) ? JobState::kRunning : job->state,
                              job->output_dest, job->output_error};
  // A finished job's output is streamed only when it was kept (its delivery
  // failed); delivered, it is at its destination, which the reply names.
  if (!job->done() || !protocol::StdoutDelivered(job->output_error)) response.attach = job->id;
  return protocol::Encode(reply);
}

void BrokerCore::Hold(const Peer& peer, std::uint64_t id, bool on, Respond respond) {
  Result<std::vector<JobRecord*>> found = LookupJobs(peer, id);
  if (!found) return respond(Response{ErrorFrame(found.error()), std::nullopt});
  // An array's queued elements; the others have started or ended.
  std::vector<JobRecord*> queued;
  for (JobRecord* job : *found) {
    if (job->queued() && job->phase == JobPhase::kIdle) queued.push_back(job);
  }
  if (queued.empty()) {
    const JobRecord& job = *found->front();
    const std::string now = found->size() > 1 ? "has no queued element"
                            : job.done()      ? "has finished"
                            : job.queued()    ? "is starting"
                                              : "is running";
    return respond(Response{ErrorFrame(Error(ErrorCode::kFailedPrecondition,
                                             "job " + Id(id) + " " + now +
                                                 "; only a queued job can be held or released")),
                            std::nullopt});
  }
  bool changed = false;
  for (JobRecord* job : queued) {
    if (job->held == on) continue;
    changed = true;
    job->held = on;
    MarkChanged(job->id);
  }
  if (changed) {
    LogInfo("job " + Id(id) + (on ? " held" : " released") + " by uid " + std::to_string(peer.uid));
    if (!on) Schedule();
  }
  AnswerWhenWritten(std::move(respond),
                    Response{protocol::Encode(protocol::HoldReply{on, changed}), std::nullopt});
}

void BrokerCore::Kill(const Peer& peer, std::uint64_t id, Respond respond) {
  Result<std::vector<JobRecord*>> found = LookupJobs(peer, id);
  if (!found) return respond(Response{ErrorFrame(found.error()), std::nullopt});
  const double now = clock_.Now();
  bool removed = false;
  bool signalled = false;
  for (JobRecord* job : *found) {
    if (job->done() || job->processes_gone) continue;  // nothing left to signal
    if (job->queued() && job->phase == JobPhase::kIdle) {
      ForgetOnExecutor(job->id);
      if (job->holds_placement) scheduler_.Release(job->placement);
      job->holds_placement = false;
      job->reason = JobReason::kKilled;
      Finish(*job, std::nullopt, now);
      LogInfo("job " + Id(job->id) + " removed from the queue by uid " + std::to_string(peer.uid));
      removed = true;
      continue;
    }
    signalled = true;
    if (!job->term_time) {
      // A repeated kill neither relabels a timeout nor postpones SIGKILL. A
      // job still starting gets its SIGTERM once it runs (ApplyStart).
      job->reason = JobReason::kKilled;
      if (job->running()) SendSignal(*job, SignalKind::kTerm, SignalNote::kKilled);
      job->term_time = now;
      job->kill_at = now + kKillGraceS;
      MarkChanged(job->id);
    }
  }
  if (!removed && !signalled) {
    return respond(Response{
        ErrorFrame(Error(ErrorCode::kFailedPrecondition, "job " + Id(id) + " already finished")),
        std::nullopt});
  }
  if (removed) {
    ApplyRetention();
    Schedule();
  }
  // An array with elements in both states is told as killing: some run on.
  const protocol::KillOutcome outcome =
      signalled ? protocol::KillOutcome::kKilling : protocol::KillOutcome::kRemoved;
  AnswerWhenWritten(std::move(respond),
                    Response{protocol::Encode(protocol::KillReply{outcome}), std::nullopt});
}

void BrokerCore::Field(const Peer& peer, const std::string& text, Respond respond) {
  auto answer = [&](const Error& error) { respond(Response{ErrorFrame(error), std::nullopt}); };
  Result<protocol::JobFieldRequest> request = protocol::Decode<protocol::JobFieldRequest>(text);
  if (!request) return answer(request.error());
  Result<JobRecord*> job = Lookup(peer, request->id);
  if (!job) return answer(job.error());
  Result<protocol::JobFieldReply> reply =
      ApplyJobField(**job, *request, permissions_.IsAdmin(peer.uid), permissions_.admin_group());
  if (!reply) return answer(reply.error());
  if (!reply->before) return respond(Response{protocol::Encode(*reply), std::nullopt});
  LogInfo("job " + Id((*job)->id) + ": max-time changed from " + FormatDuration(*reply->before) +
          " to " + FormatDuration(reply->value) + " by uid " + std::to_string(peer.uid));
  MarkChanged((*job)->id);
  AnswerWhenWritten(std::move(respond), Response{protocol::Encode(*reply), std::nullopt});
}

void BrokerCore::Output(const Peer& peer, const std::string& text, Respond respond) {
  auto answer = [&](const Error& error) { respond(Response{ErrorFrame(error), std::nullopt}); };
  Result<protocol::OutputRequest> request = protocol::Decode<protocol::OutputRequest>(text);
  if (!request) return answer(request.error());
  Result<JobRecord*> found = Lookup(peer, request->id);
  if (!found) return answer(found.error());
  JobRecord& job = **found;
  const std::string id = Id(job.id);
  if (!job.done()) {
    return answer(Error(ErrorCode::kFailedPrecondition, "job " + id + " has not finished"));
  }
  if (!job.output_dest) {
    return answer(Error(ErrorCode::kFailedPrecondition,
                        "job " + id + " ran with --no-output; nothing was kept"));
  }
  if (!job.output_error && !request->to) {
    protocol::OutputAnswer already{*job.output_dest, true};
    return respond(Response{protocol::Encode(already), std::nullopt});
  }
  if (!job.output_error) {
    return answer(Error(ErrorCode::kFailedPrecondition,
                        "job " + id + "'s output was delivered to " + *job.output_dest +
                            "; no copy is kept to send elsewhere"));
  }
  if (request->to && peer.uid != job.uid) {
    return answer(Error(ErrorCode::kPermissionDenied,
                        "only the job's owner may send its output somewhere new"));
  }
  const std::uint64_t job_id = job.id;
  executor_.DeliverAgain(
      job_id, request->to ? peer.fd : -1,
      [this, job_id, respond = std::move(respond)](Result<protocol::OutputReply> reply) mutable {
        auto it = jobs_.find(job_id);
        Error failure = !reply         ? reply.error()
                        : reply->error ? reply->error->ToError()
                                       : Error(ErrorCode::kInternal, "");
        if (reply && !reply->error && reply->output_dest) {
          if (it != jobs_.end()) {
            it->second.output_dest = reply->output_dest;
            it->second.output_error.reset();
            MarkChanged(job_id);
          }
          output_retries_.Drop(job_id);
          AnswerWhenWritten(
              std::move(respond),
              Response{protocol::Encode(protocol::OutputAnswer{*reply->output_dest, false}),
                       std::nullopt});
          return;
        }
        if (it != jobs_.end() && reply && reply->error) {
          it->second.output_error = reply->error->message;
          MarkChanged(job_id);
          RetryLater(it->second);
        }
        respond(Response{ErrorFrame(failure), std::nullopt});
      });
}

void BrokerCore::RetryLater(const JobRecord& job, double first_s) {
  if (!job.output_error || !job.output_dest) return;
  output_retries_.Failed(job.id, *job.output_error, clock_.Now(), first_s);
}

void BrokerCore::RetryDeliveries() {
  for (std::uint64_t id : output_retries_.TakeDue(clock_.Now())) {
    auto it = jobs_.find(id);
    if (it == jobs_.end() || !it->second.done() || !it->second.output_error) {
      output_retries_.Drop(id);
      continue;
    }
    executor_.DeliverAgain(id, -1, [this, id](const Result<protocol::OutputReply>& reply) {
      OnRedelivered(id, reply);
    });
  }
}

void BrokerCore::OnRedelivered(std::uint64_t id, const Result<protocol::OutputReply>& reply) {
  if (reply && !reply->error && reply->output_dest) {
    return AdoptDelivery(id, reply->output_dest, std::nullopt);
  }
  // Refused, failed, or not answered in time: the executor's record says
  // how it stands (a delivery that outlived the call may have ended since,
  // and a copy that is no longer kept is not asked for again).
  executor_.Query(id, [this, id](const Result<std::optional<protocol::JobSummary>>& summary) {
    auto it = jobs_.find(id);
    if (it == jobs_.end() || !it->second.done()) return output_retries_.Drop(id);
    if (!summary) {
      output_retries_.Landed(id);
      return output_retries_.Failed(id, it->second.output_error.value_or(""), clock_.Now());
    }
    if (!*summary) return output_retries_.Drop(id);  // the root side holds no copy
    AdoptDelivery(id, (*summary)->output_dest, (*summary)->output_error);
  });
}

void BrokerCore::AdoptDelivery(std::uint64_t id, const std::optional<std::string>& dest,
                               const std::optional<std::string>& error) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.done()) return output_retries_.Drop(id);
  output_retries_.Landed(id);
  JobRecord& job = it->second;
  job.output_dest = dest;
  job.output_error = error;
  // Synced: start-up does not re-read a finished job from the root side,
  // so a lost update would leave it undelivered on record for good.
  MarkChanged(id);
  if (error) return output_retries_.Failed(id, *error, clock_.Now());
  LogInfo("job " + Id(id) + ": its kept output was delivered to " + dest.value_or("?") +
          " on a later try");
  output_retries_.Drop(id);
  // Delivered at last: it may now make way under --keep-finished.
  ApplyRetention();
}

void BrokerCore::CollectForScheduler(std::vector<QueuedJob>& queue,
                                     std::vector<RunningJob>& running) const {
  const double now = clock_.Now();
  // `%N` holds for every policy: no more elements are offered than may start.
  std::map<std::uint64_t, std::uint32_t> room = ThrottledRoom();
  for (auto it = FirstUnfinished(); it != jobs_.end(); ++it) {
    const std::uint64_t id = it->first;
    const JobRecord& job = it->second;
    if (job.holds_placement) {
      // Running, or placed and starting: its resources are taken.
      const double start = job.start_time.value_or(now);
      running.push_back({id, job.placement, start + static_cast<double>(job.max_time_s)});
    } else if (job.queued() && !job.held && !draining_ && job.start_retry_at <= now &&
               CheckDependencies(job, jobs_).state == DependencyState::kMet) {
      if (job.array_throttle) {
        std::uint32_t& left = room[*job.array_id];
        if (left == 0) continue;
        --left;
      }
      queue.push_back({id, job.demand, job.max_time_s});
    }
  }
}

std::optional<broker::Start> BrokerCore::PlaceNewJob(const JobRecord& job) {
  std::vector<QueuedJob> queue;
  std::vector<RunningJob> running;
  CollectForScheduler(queue, running);
  std::optional<broker::Start> mine;
  for (broker::Start& start : scheduler_.Schedule(queue, running, clock_.Now())) {
    if (start.id == job.id) {
      mine = std::move(start);
      continue;
    }
    // An older job the same plan starts is started now, not released and
    // planned again: a stateful policy (easy-backfill's budget) would
    // count it twice.
    StartPlanned(start);
  }
  return mine;
}

protocol::StartJob BrokerCore::StartRequest(const JobRecord& job,
                                            const Placement& placement) const {
  protocol::StartJob request;
  request.id = job.id;
  request.placement = placement;  // the part root is told
  if (job.array_id) {
    request.array = job.array_id;
    request.array_index = job.array_index;
  }
  if (job.demand.mem_gib > 0) {
    request.memory_max = static_cast<std::uint64_t>(std::floor(job.demand.mem_gib * 1073741824.0));
  }
  return request;
}

void BrokerCore::StartPlanned(broker::Start& start) {
  auto it = jobs_.find(start.id);
  if (it == jobs_.end() || !it->second.queued() || it->second.holds_placement) {
    scheduler_.Release(start.placement);
    return;
  }
  JobRecord& job = it->second;
  job.placement = std::move(start.placement);
  job.holds_placement = true;
  // A job still registering is started when its registration completes.
  if (job.phase == JobPhase::kIdle) SendStart(job);
}

void BrokerCore::SendStart(JobRecord& job) {
  job.phase = JobPhase::kStarting;
  const std::uint64_t id = job.id;
  executor_.Start(
      StartRequest(job, job.placement),
      [this, id](const Result<protocol::StartReply>& reply) { OnStartReply(id, reply); });
}

void BrokerCore::OnStartReply(std::uint64_t id, const Result<protocol::StartReply>& reply) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() && reply && !reply->error) {
    // Taken back while its spawn was under way (the executor saw another
    // uid): the kill sent then was refused, as it was not running yet. A
    // job nobody tracks must not run; its exit is then forgotten (OnExited).
    LogWarning("job " + Id(id) + " started after it was taken back; killing it");
    executor_.Signal(protocol::SignalJob{0, id, SignalKind::kKill, SignalNote::kKilled, 0},
                     LogRefusal("killing job " + Id(id)));
    return;
  }
  if (it == jobs_.end() || it->second.phase != JobPhase::kStarting) return;
  ApplyStart(it->second, reply);
  // A start that went through frees nothing and ends nothing, so a pass
  // now would place what the last one did: a burst's spawn reports would
  // each pay a walk over the whole queue for no start. Any other outcome
  // (refused, failed, ended, unknown) may have freed room.
  if (auto now = jobs_.find(id); now != jobs_.end() && now->second.running() &&
                                 now->second.holds_placement &&
                                 now->second.phase == JobPhase::kIdle) {
    return;
  }
  Schedule();
}

void BrokerCore::ApplyStart(JobRecord& job, const Result<protocol::StartReply>& reply) {
  job.phase = JobPhase::kIdle;
  // A start refused as "not now" (kUnavailable) leaves an element the root
  // side had not made yet unmade: it makes one only once a start's checks
  // pass (ExecutorServer::MakeArrayElement).
  const bool not_now =
      reply && reply->error && reply->error->ToError().code() == ErrorCode::kUnavailable;
  if (!not_now || !job.array_id) {
    ElementMadeOrGone(job);
    job.on_executor = true;
  }
  MarkChanged(job.id, Held::kAlsoOnRootSide);  // a failed start's Finish asks for the sync
  if (!reply) return ReconcileStart(job.id, reply.error());
  const double now = clock_.Now();
  if (reply->error && reply->error->ToError().code() == ErrorCode::kUnavailable) {
    // Not started, and not its fault (the launcher is gone or wedged): it
    // keeps its place in the queue and is tried again by a later pass.
    scheduler_.Release(job.placement);
    job.holds_placement = false;
    if (job.term_time) {
      // Killed while this start was under way: it never ran, and ends here
      // as a queued job that is killed does.
      job.term_time.reset();
      job.kill_at.reset();
      ForgetOnExecutor(job.id);
      Finish(job, std::nullopt, now);
      ApplyRetention();
      return;
    }
    constexpr double kFirstRetryS = 0.1;
    constexpr double kLongestRetryS = 10;
    const bool first = job.start_backoff_s == 0;
    job.start_backoff_s = std::clamp(job.start_backoff_s * 2, kFirstRetryS, kLongestRetryS);
    job.start_retry_at = now + job.start_backoff_s;
    // One line when it starts waiting, not one per try.
    const std::string line = "job " + Id(job.id) + " was not started (" + reply->error->message +
                             "); it stays queued and is tried again, at most every " +
                             FormatDuration(static_cast<std::int64_t>(kLongestRetryS));
    if (first) {
      LogWarning(line);
    } else {
      Log(LogLevel::kDebug, line);
    }
    return;
  }
  if (job.start_backoff_s > 0) {
    LogInfo("job " + Id(job.id) + " could be started again");
    job.start_backoff_s = 0;
    job.start_retry_at = 0;
  }
  if (reply->error) {
    scheduler_.Release(job.placement);
    job.holds_placement = false;
    LogWarning("job " + Id(job.id) + " failed to start: " + reply->error->message);
    if (!job.reason) job.reason = JobReason::kError;
    job.detail = reply->error->message;
    job.output_error = reply->output_error;
    Finish(job, std::nullopt, now);
    RetryLater(job);
    ApplyRetention();
    return;
  }
  job.state = JobState::kRunning;
  job.start_time = reply->start_time > 0 ? reply->start_time : now;
  LogInfo("job " + Id(job.id) + " started (pid " + std::to_string(reply->pid) + ", cpus " +
          FormatCommaList(job.placement.cpus) + ", mem nodes " +
          FormatCommaList(job.placement.mems) + ")");
  KnownToHaveStarted(job);
  // Started, it no longer needs its dependencies kept (AwaitedJobs).
  if (!job.after.empty()) ApplyRetention();
}

void BrokerCore::ReconcileStart(std::uint64_t id, const Error& why) {
  LogError("no answer to the start of job " + Id(id) + " (" + why.message() +
           "); asking the executor what became of it");
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  it->second.phase = JobPhase::kStarting;
  executor_.Query(id, [this, id](Result<std::optional<protocol::JobSummary>> summary) {
    auto found = jobs_.find(id);
    if (found == jobs_.end()) return;
    JobRecord& job = found->second;
    job.phase = JobPhase::kIdle;
    MarkChanged(id);
    const double now = clock_.Now();
    if (!summary) {
      // Nothing the executor says can be trusted to arrive: the job's
      // placement stays held (it may be running) and the queue stops
      // growing on a broker that cannot start anything. Restarting the
      // roles asks again from scratch.
      LogError("the executor does not answer; job " + Id(id) + " keeps its placement");
      executor_lost_ = true;
      return;
    }
    if (*summary && (*summary)->state == SpecState::kRunning) {
      job.state = JobState::kRunning;
      job.start_time = (*summary)->start_time > 0 ? (*summary)->start_time : now;
      KnownToHaveStarted(job);
      // What it held, if it had ended, was freed in a turn with no exit event.
      if (!job.holds_placement) Schedule();
      return;
    }
    scheduler_.Release(job.placement);
    job.holds_placement = false;
    // Either way its placement was freed in a turn with no exit event, so
    // the pass runs here: the loop would leave it to the next tick.
    if (*summary && (*summary)->state == SpecState::kRegistered) {
      return Schedule();  // never started: queued again, placed by this pass
    }
    job.reason = JobReason::kError;
    if (*summary) job.output_error = (*summary)->output_error;
    Finish(job, *summary ? (*summary)->exit_code : std::nullopt, now);
    RetryLater(job);
    ApplyRetention();
    Schedule();
  });
}

void BrokerCore::Schedule() {
  ResolveDependencies();
  std::vector<QueuedJob> queue;
  std::vector<RunningJob> running;
  CollectForScheduler(queue, running);
  if (queue.empty()) return;
  for (broker::Start& start : scheduler_.Schedule(queue, running, clock_.Now())) {
    StartPlanned(start);
  }
  ApplyRetention();
}

void BrokerCore::SendSignal(JobRecord& job, SignalKind signal, SignalNote note) {
  executor_.Signal(protocol::SignalJob{0, job.id, signal, note, job.max_time_s},
                   LogRefusal("signal to job " + Id(job.id)));
}

void BrokerCore::ForgetOnExecutor(std::uint64_t id) {
  if (auto it = jobs_.find(id); it != jobs_.end()) {
    if (!it->second.on_executor) return;
    it->second.on_executor = false;
    it->second.forget_unanswered = true;
  }
  forgets_due_.push_back(id);
}

void BrokerCore::SendDueForgets(bool saved) {
  std::vector<std::uint64_t> due;
  due.swap(forgets_due_);
  for (std::uint64_t id : due) {
    // A record still here waits for the write that says it ended; one
    // already dropped was never acknowledged or had ended on disk before.
    if (!saved && jobs_.contains(id)) {
      forgets_due_.push_back(id);
      continue;
    }
    if (jobs_.contains(id) || arrays_forgetting_.contains(id)) {
      executor_.Forget(id,
                       [this, id](const Result<protocol::Ack>& ack) { OnForgetAnswered(id, ack); });
    } else {
      executor_.Forget(id, LogRefusal("forgetting job " + Id(id)));
    }
  }
}

void BrokerCore::ForgetArray(std::uint64_t array) {
  arrays_forgetting_.insert(array);
  ForgetOnExecutor(array);
}

void BrokerCore::OnForgetAnswered(std::uint64_t id, const Result<protocol::Ack>& ack) {
  auto it = jobs_.find(id);
  const bool array = it == jobs_.end() && arrays_forgetting_.contains(id);
  if (!array && (it == jobs_.end() || !it->second.forget_unanswered)) return;
  if (!ack) {  // unanswered in time: asked again (a lost executor ends the broker)
    LogWarning("forgetting job " + Id(id) + ": " + ack.error().message() + "; asking again");
    forgets_due_.push_back(id);
    return;
  }
  // Refused, the executor holds no spec for it either (it knows no such
  // job, or never will run it): the record can go.
  if (ack->error) LogWarning("forgetting job " + Id(id) + " refused: " + ack->error->message);
  if (array) {
    arrays_forgetting_.erase(id);
    touched_.retention_all = true;  // its ended elements may go now
    return;
  }
  it->second.forget_unanswered = false;
  if (it->second.phase != JobPhase::kForgetting) {
    touched_.for_retention.insert(id);  // retention may have passed it by, waiting for this
    return;
  }
  jobs_.erase(it);
  // No sync of its own: a removal lost to a power cut brings back a
  // finished record with no spec behind it, which retention drops again.
  MarkChanged(id, Held::kAlsoOnRootSide);
}

std::map<std::uint64_t, JobRecord>::iterator BrokerCore::FirstUnfinished() {
  const auto first = std::as_const(*this).FirstUnfinished();
  return jobs_.erase(first, first);  // the same position, as a mutable iterator
}

std::map<std::uint64_t, JobRecord>::const_iterator BrokerCore::FirstUnfinished() const {
  auto it = jobs_.lower_bound(unfinished_from_);
  while (it != jobs_.end() && it->second.done())
    ++it;
  unfinished_from_ = it == jobs_.end() ? next_id_ : it->first;
  return it;
}

void BrokerCore::CheckTimers() {
  const double now = clock_.Now();
  for (auto it = FirstUnfinished(); it != jobs_.end(); ++it) {
    const std::uint64_t id = it->first;
    JobRecord& job = it->second;
    if (!job.running() || job.processes_gone) continue;
    const double start = job.start_time.value_or(now);
    if (!job.term_time && now - start > static_cast<double>(job.max_time_s)) {
      LogInfo("job " + Id(id) + " exceeded its time limit (" + FormatDuration(job.max_time_s) +
              "); killing");
      job.reason = JobReason::kTimeout;
      SendSignal(job, SignalKind::kTerm, SignalNote::kTimeout);
      job.term_time = now;
      job.kill_at = now + kKillGraceS;
      MarkChanged(id);
    } else if (job.kill_at && now >= *job.kill_at) {
      LogInfo("escalating to SIGKILL for job " + Id(id));
      SendSignal(job, SignalKind::kKill, SignalNote::kNone);
      job.kill_at = now + kKillGraceS;
      MarkChanged(id);
    }
  }
}

void BrokerCore::Finish(JobRecord& job, std::optional<std::int64_t> exit_code, double end_time,
                        Held held) {
  ElementMadeOrGone(job);
  job.state = JobState::kDone;
  job.end_time = end_time;
  job.exit_code = exit_code;
  job.kill_at.reset();
  if (job.holds_placement) {
    scheduler_.Release(job.placement);
    job.holds_placement = false;
  }
  MarkChanged(job.id, held);
  std::string line = "job " + Id(job.id) + " finished (exit=" +
                     (exit_code ? std::to_string(*exit_code) : std::string("unknown"));
  if (job.reason) line += ", reason=" + std::string(protocol::NameOf(*job.reason));
  LogInfo(line + ")");
}

void BrokerCore::OnExited(const protocol::JobExited& event) {
  auto it = jobs_.find(event.id);
  if (it == jobs_.end() && event.delivering) return;  // the event that follows says it all
  if (it == jobs_.end()) {
    // One killed at start-up for missing from the queue file (Start), or
    // one whose registration timed out.
    LogWarning("exit event for job " + Id(event.id) + ", which is not in the queue; forgetting it");
    ForgetOnExecutor(event.id);
    return;
  }
  if (event.delivering) {
    // Its processes are gone and its output is on its way: the cpus and
    // memory go back now (the loop's pass after its events places them),
    // or, for a start whose answer is still awaited, once it is known
    // (ApplyStart, ReconcileStart); the job ends with the event that follows.
    JobRecord& job = it->second;
    if (job.holds_placement && !job.done()) job.processes_gone = true;
    if (job.running()) ReleaseEnded(job);
    return;
  }
  if (!it->second.running()) {
    if (it->second.done() && event.output_error) {
      // A job that failed to start: its output's delivery ended after.
      it->second.output_error = event.output_error;
      MarkChanged(event.id);
      RetryLater(it->second);
      return;
    }
    LogWarning("exit event for job " + Id(event.id) + ", which is not running here");
    return;
  }
  JobRecord& job = it->second;
  if (event.oom && !job.reason) job.reason = JobReason::kOom;
  if (event.note && !job.detail) job.detail = event.note;
  job.output_error = event.output_error;
  job.usage = event.usage;
  // The launch spec holds the end, but not the note (why it was killed):
  // an end with one waits for the sync.
  Finish(job, event.exit_code, event.end_time > 0 ? event.end_time : clock_.Now(),
         event.note ? Held::kOnlyHere : Held::kAlsoOnRootSide);
  RetryLater(job);
  ApplyRetention();
}

void BrokerCore::KnownToHaveStarted(JobRecord& job) {
  // It may have ended already (its release came ahead of the start's
  // answer); if not, and it was killed while it was starting, its SIGTERM
  // is due now.
  if (job.processes_gone) return ReleaseEnded(job);
  if (job.term_time) SendSignal(job, SignalKind::kTerm, SignalNote::kKilled);
}

void BrokerCore::ReleaseEnded(JobRecord& job) {
  if (!job.processes_gone || !job.holds_placement) return;
  scheduler_.Release(job.placement);
  job.holds_placement = false;
  LogInfo("job " + Id(job.id) + " ended; its resources are free while its output is delivered");
}

void BrokerCore::ApplyRetention() {
  if (!RetentionDue()) return;
  for (std::uint64_t id : RetentionVictims(jobs_, options_.keep_finished)) {
    JobRecord& job = jobs_.at(id);
    if (job.phase != JobPhase::kIdle) continue;  // a call for it (its forget) is under way
    // The bargain: an ended element is kept while its array's spec is
    // (more than --keep-finished may be): the spec lists every index, so
    // a restart takes an element with neither a record here nor a spec of
    // its own for one never started (RebuildElements), and would run it.
    if (job.array_id && array_unmade_.contains(*job.array_id)) continue;
    // One that never started is listed by that spec alone until its forget
    // is answered.
    if (job.array_id && !job.start_time && arrays_forgetting_.contains(*job.array_id)) continue;
    if (job.forget_unanswered) continue;  // dropped once answered (OnForgetAnswered)
    if (job.on_executor) {
      ForgetOnExecutor(id);
      job.phase = JobPhase::kForgetting;  // OnForgetAnswered drops it
      continue;
    }
    jobs_.erase(id);
    MarkChanged(id);
  }
}

void BrokerCore::Tick() {
  for (const protocol::JobExited& event : executor_.TakeEvents())
    OnExited(event);
  RetryDeliveries();
  CheckTimers();
  Schedule();
  ApplyRetention();  // a record whose forget was answered (Schedule's own pass needs a queue)
}

void BrokerCore::Flush() {
  if (changed_.empty() && awaiting_write_.empty() && !draining_unsaved_) {
    SendDueForgets(true);
    return;
  }
  Result<void> saved = changed_.empty() && !draining_unsaved_ ? Ok() : Persist();
  std::vector<DurableAnswer> answers;
  answers.swap(awaiting_write_);
  for (DurableAnswer& answer : answers) {
    if (!saved && answer.if_lost) {
      Response instead = answer.if_lost(saved.error());
      answer.respond(instead.frame.empty() ? std::move(answer.response) : std::move(instead));
    } else {
      answer.respond(std::move(answer.response));
    }
  }
  SendDueForgets(static_cast<bool>(saved));
}

const JobRecord* BrokerCore::Find(std::uint64_t id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

QueueFile BrokerCore::Snapshot() const {
  QueueFile file;
  file.next_id = next_id_;
  file.draining = draining_;
  for (const auto& [id, job] : jobs_) {
    // Not acknowledged yet: a restart must not find it.
    if (job.phase != JobPhase::kRegistering) file.jobs.push_back(job);
  }
  return file;
}

Result<void> BrokerCore::Persist(bool compact) {
  if (store_ == nullptr) {
    changed_.clear();
    sync_due_ = false;
    draining_unsaved_ = false;
    return Ok();
  }
  Result<void> saved = Ok();
  if (compact || draining_unsaved_ || store_->WantsCompaction()) {
    saved = store_->Save(Snapshot());
  } else if (!changed_.empty()) {
    std::vector<QueueChange> changes;
    changes.reserve(changed_.size());
    for (std::uint64_t id : changed_) {
      auto it = jobs_.find(id);
      if (it != jobs_.end() && it->second.phase == JobPhase::kRegistering) continue;
      changes.push_back({id, it == jobs_.end() ? nullptr : &it->second});
    }
    saved = store_->Append(next_id_, changes, sync_due_);
  }
  if (!saved) {
    // changed_ is kept; the store wants a compaction now, which the next
    // Persist (at the latest the next Flush) writes with everything.
    LogError("cannot write the queue file: " + saved.error().message());
    return saved;
  }
  changed_.clear();
  sync_due_ = false;
  draining_unsaved_ = false;
  return Ok();
}

}  // namespace hpcb::broker

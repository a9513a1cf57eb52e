// The executor: the only reader of broker messages. It checks every field
// against facts it read itself, keeps the root-only launch specs, makes job
// cgroups, dirs and links, and asks the launcher to act as users.
//
// It never waits. A request that needs the launcher (spawning, delivering
// output, checking a new output path) becomes a pending call with a
// deadline, and its reply to the broker goes out when that call completes;
// meanwhile every other request is served. Each job has at most one such
// operation in flight (starting or finishing); a request that would
// overlap it is refused.
//
// The methods are split by job across files: executor_server.cc (the loop
// and the broker's requests), job_register.cc, job_start.cc, job_finish.cc
// (ending a job and delivering its output) and job_recovery.cc (what a
// restart finds).
#ifndef HPCB_EXECUTOR_EXECUTOR_SERVER_H_
#define HPCB_EXECUTOR_EXECUTOR_SERVER_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "common/host/run_record.h"
#include "executor/job_cgroup.h"
#include "executor/job_dir.h"
#include "executor/job_phase.h"
#include "executor/launch_spec.h"
#include "executor/spec_store.h"
#include "executor/usage_book.h"
#include "protocol/executor_messages.h"
#include "protocol/framing.h"
#include "protocol/launcher_messages.h"
#include "protocol/outbox.h"
#include "protocol/pending_calls.h"
#include "protocol/root_config.h"

namespace hpcb::executor {

// What the executor found of itself and the machine at start-up (the ids
// root needs, the admin group's and the broker user's, are RootConfig's).
struct ExecutorFacts {
  bool as_root = false;
  uid_t self_uid = 0;
  int gpu_count = 0;
  std::set<int> cpus;
  std::set<int> nodes;
  std::string lang;
};

class ExecutorServer {
 public:
  ExecutorServer(protocol::RootConfig config, ExecutorFacts facts, int launcher_fd, int broker_fd);

  // Reads STATE/specs and STATE/run: registered, still-running and
  // dead-on-arrival jobs.
  void Recover();
  // Serves until the broker goes away (Ok) or the launcher does (error).
  Result<void> Run();

  // One broker message. Replies go to the broker's fd: at once, or when
  // the launcher call it waits on completes. Public for tests.
  void Handle(const protocol::Packet& packet);
  // One launcher message (a reply, or an event). Public for tests.
  void OnLauncherMessage(const protocol::Packet& packet);
  // Times out overdue launcher calls and retries cgroup removals.
  void Tick();
  // Ends a loop turn: the specs saved during it are made durable (one
  // fsync of the specs directory, spec_store.h), then the answers the turn
  // held go to the broker, in order (held_answers_). An error means the
  // disk would not take them: nothing more is sent, and the executor must
  // stop. Public for tests, which call it where the loop would.
  Result<void> EndTurn();
  bool recovery_failed() const { return recovery_error_.has_value(); }

  std::string specs_dir() const { return config_.state_dir + "/specs"; }
  std::string high_water_path() const { return specs_dir() + "/high_water"; }
  std::string run_dir() const { return config_.state_dir + "/run"; }
  std::string job_dir(std::uint64_t id) const {
    return config_.state_dir + "/jobs/" + std::to_string(id);
  }

 private:
  using StartDone = std::function<void(protocol::StartReply)>;

  // executor_server.cc: the broker's requests that finish at once.
  void OnHello(std::uint64_t req, const std::string& text);
  void OnListJobs(std::uint64_t req, const std::string& text);
  void OnSignal(std::uint64_t req, const std::string& text);
  void OnForget(std::uint64_t req, const std::string& text);
  void OnOpenOutput(std::uint64_t req, const std::string& text);
  void SendToBroker(const std::string& text, const std::vector<int>& fds = {});
  void Refuse(std::uint64_t req, std::uint64_t id, const std::string& what, const Error& error);
  // The job's phase (job_phase.h), from in_flight_ and its spec.
  JobPhase PhaseOf(std::uint64_t id) const;
  // Too little room left in the state directory to record a job's start
  // or keep its output whole.
  bool StateDirNearlyFull() const;

  // job_register.cc
  void OnRegister(std::uint64_t req, const protocol::Packet& packet);
  // Once the submitter and its frame are read: dir, spec, optional start.
  void FinishRegister(protocol::RegisterJob request, LaunchSpec spec);
  // An array's element, made at its first start (StartJob::array), once
  // the start's own checks have passed.
  Result<void> MakeArrayElement(const protocol::StartJob& request);
  // What MakeArrayElement checks before it changes anything.
  Result<void> CheckArrayElement(const protocol::StartJob& request) const;
  // Refused if `bytes` more would take `uid` past --max-user-state-mib.
  Result<void> CheckStateRoom(std::uint32_t uid, std::uint64_t bytes) const;

  // job_start.cc
  void OnStart(std::uint64_t req, const std::string& text);
  // Starts a registered job; `done` gets the StartReply (always exactly
  // once, possibly before this returns).
  void BeginStart(const protocol::StartJob& request, StartDone done);
  Result<void> ValidatePlacement(const protocol::StartJob& request) const;
  void OnSpawned(std::uint64_t id, const protocol::StartJob& request,
                 Result<protocol::SpawnReply> reply, StartDone done);
  // The job will never run: its reason goes into its output, `done` gets
  // the failed StartReply at once, and the output is delivered after (a
  // JobExited then carries the delivery's error, if any).
  void FailStart(std::uint64_t id, const std::string& message, bool remove_cgroup, StartDone done);

  // job_output.cc: delivering a kept output again, on the broker's request.
  void OnDeliverAgain(std::uint64_t req, const protocol::Packet& packet);
  // Delivers `spec`'s kept buffer to `dest`; on success the spec records it.
  void Redeliver(std::uint64_t id, std::string dest,
                 std::function<void(std::optional<std::string> error)> done);

  // job_finish.cc
  void OnChildExited(const protocol::ChildExited& event);
  // The job ended: cgroup, output, spec, event. Its exit code, end time
  // and usage come from its run record (read once), or are unknown.
  void Finish(std::uint64_t id);
  // Asks the launcher to deliver the buffers (output, and error with
  // --error) as the user; `done` gets the output error (nullopt: delivered,
  // or nothing to deliver).
  void DeliverOutput(const LaunchSpec& spec, std::function<void(std::optional<std::string>)> done);
  // One buffer `name` of the job dir to `to` (none: dropped).
  void DeliverBuffer(const LaunchSpec& spec, const std::string& name,
                     const std::optional<std::string>& to,
                     std::function<void(std::optional<std::string>)> done);
  void AppendLine(const LaunchSpec& spec, const std::string& line);
  // After its output is delivered: the job's --notify command is queued
  // behind its user's others, and runs now if it is their only one.
  void Notify(const LaunchSpec& spec, const protocol::JobExited& event);
  // Has the launcher run `uid`'s first waiting command, then the next.
  void RunNotify(std::uint32_t uid);
  // Job `id`'s dir, gone with the job: root removes what it made there and
  // the dir (job_dir.h). A dir `who` left more in is queued behind their
  // others, to be emptied as them (EmptyNextDir).
  void DropJobDir(std::uint64_t id, const protocol::UserIdentity& who);
  // Has the launcher empty `uid`'s first waiting dir, then removes it;
  // what stays is logged, for an admin. Then the next.
  void EmptyNextDir(std::uint32_t uid);
  Result<UniqueFd> OpenBuffer(const LaunchSpec& spec, int flags,
                              const std::string& name = "output") const;
  // The job's dir and dev link; info.json too unless a start follows
  // (which writes it, as started).
  Result<void> MakeJobDir(const LaunchSpec& spec, bool start_follows);
  std::optional<JobDirOwner> OwnerOf(const LaunchSpec& spec) const;
  // info.json: the job as users see it, never its environment.
  static std::string InfoText(const LaunchSpec& spec);
  void WriteInfo(const LaunchSpec& spec);
  void RetryCgroupRemovals();
  // What a job that ended used (job_finish.cc); none if nothing counted it.
  std::optional<protocol::JobUsage> MeasureUsage(const LaunchSpec& spec,
                                                 const host::RunRecord* record,
                                                 double end_time) const;
  // The spec saved (spec_store.h), then the user's usage (usage_book.h)
  // brought up to date. Durable before any answer of this turn goes out
  // (the turn's end commits first), unless saved with kSoon: a plain end,
  // which the job's run record also holds. A failure is logged here.
  Result<void> Save(LaunchSpec& spec, SpecStore::Flush flush = SpecStore::Flush::kBeforeAnswers);
  // What `spec` holds on disk: its record, plus a kept buffer once exited.
  std::uint64_t BytesHeld(const LaunchSpec& spec, std::uint64_t spec_bytes) const;

  // job_recovery.cc
  // Drops the run records of starts whose shepherd is gone; settling_
  // keeps those whose shepherd lives.
  void SettleStartingJobs(const std::vector<std::uint64_t>& ids);
  bool ShepherdMayStillStart(const host::RunRecord& record) const;
  // From the loop while starts settle: once they have (or their time is
  // up) the specs are loaded and recovery completes.
  Result<void> SettleStep();
  void LoadSpecs();
  // Leftover cgroups pruned, and what recovery saved and said flushed.
  Result<void> CompleteRecovery();
  // Removes the spec of `id` (and its run record) if it is empty; true then.
  bool DropEmptySpec(std::uint64_t id);
  // Kills job `id` if its run record shows it running under its shepherd.
  void KillJobWithoutSpec(std::uint64_t id);
  // Job dirs and dev entries no launch spec accounts for (a registration
  // cut short): removed, so their ids can be registered again.
  void PruneLeftovers();
  // Jobs whose shepherd is not the current launcher's child (a restart of
  // the launcher left it behind): polled for their end.
  void PollForeign();

  // Sends a launcher request; `done` gets the decoded reply or the error.
  template <class Reply, class Request>
  void AskLauncher(Request request, const std::vector<int>& fds, std::chrono::milliseconds timeout,
                   const std::string& what, std::function<void(Result<Reply>)> done);

  protocol::RootConfig config_;
  JobCgroups cgroups_{config_.no_cgroups ? std::nullopt : std::optional(config_.cgroup_root)};
  // The answers of this loop turn, held until what it saved is durable
  // (EndTurn), then sent in the order they were held. An answer sent before
  // could acknowledge a job that a power cut then loses; a failed commit
  // sends nothing, and the executor stops. Each holds its own copies of
  // its fds (the caller's close once SendToBroker returns).
  struct HeldAnswer {
    std::string text;
    std::vector<UniqueFd> fds;
  };
  std::vector<HeldAnswer> held_answers_;
  SpecStore store_{config_.state_dir + "/specs"};
  // Why the specs could not be brought back at start-up (Run stops).
  std::optional<Error> recovery_error_;
  ExecutorFacts facts_;
  int launcher_fd_;
  int broker_fd_;
  // Sends never block (outbox.h): a burst each way with a slow reader
  // queues here while the loop keeps reading.
  protocol::Outbox to_launcher_{launcher_fd_};
  protocol::Outbox to_broker_{broker_fd_};
  protocol::PendingCalls launcher_calls_;
  UsageBook usage_;
  std::map<std::uint64_t, LaunchSpec> jobs_;
  // The one step a job may have in flight: kStarting or kFinishing
  // (job_phase.h). A job not here is in the phase its spec's
  // state says, or unknown.
  std::map<std::uint64_t, JobPhase> in_flight_;
  std::set<std::uint64_t> never_saved_;  // registered, no spec saved yet
  // Jobs by the shepherd this executor spawned them with: a hint that spares
  // each exit a scan of every spec (adopted ones are found by the scan).
  std::map<std::int64_t, std::uint64_t> by_shepherd_;
  std::set<std::uint64_t> foreign_;  // running, shepherd not our launcher's child
  std::vector<std::uint64_t> dead_on_arrival_;
  std::vector<protocol::Packet> launcher_events_;  // held until the broker says hello
  // Job cgroups whose rmdir failed in Finish (EBUSY): retried from Tick
  // until removed or past the deadline.
  std::map<std::uint64_t, std::chrono::steady_clock::time_point> cgroups_to_remove_;
  // Running jobs the broker signalled, and why (SignalJob::note), for
  // HPC_BATCH_JOB_STATE. Dropped when they end.
  std::map<std::uint64_t, protocol::SignalNote> signalled_;
  // --notify commands by user: the front one is running, the others wait
  // (at most kMaxWaitingNotify), so one user's slow command holds up only
  // their own and never this loop. Memory only: a restart drops them.
  std::map<std::uint32_t, std::deque<protocol::NotifyRequest>> notify_;
  // Dirs their users left files in, to be emptied as them, by user: the
  // front one is being emptied, so each user has at most one helper at it
  // (a burst of forgets forks no burst of helpers). Memory only: a restart
  // finds the others as leftovers (PruneLeftovers).
  std::map<std::uint32_t, std::deque<protocol::EmptyDirRequest>> to_empty_;
  bool greeted_ = false;
  bool state_dir_full_ = false;  // as the last start found it
  // Recovery waits, in the loop, for starts a restart interrupted; no
  // broker request is read until the specs are loaded.
  std::set<std::uint64_t> settling_;
  std::chrono::steady_clock::time_point settle_until_;
  bool specs_loaded_ = false;
  // The highest job id the root side ever held (STATE/specs/high_water
  // keeps it past forgotten jobs).
  std::uint64_t high_water_ = 0;
};

// Exit code for the wire: status >= 0, negative signal.
std::int64_t ExitCodeFromStatus(int status);

template <class Reply, class Request>
void ExecutorServer::AskLauncher(Request request, const std::vector<int>& fds,
                                 std::chrono::milliseconds timeout, const std::string& what,
                                 std::function<void(Result<Reply>)> done) {
  // The reply is decoded as what we asked for; a Refused (the launcher
  // could not take the request) carries the error instead.
  request.req = launcher_calls_.Add(timeout, what, [done](Result<protocol::Packet> packet) {
    if (!packet) return done(packet.error());
    Result<protocol::Envelope> envelope = protocol::PeekEnvelope(packet->bytes);
    if (envelope && envelope->type == protocol::NameOf(protocol::LauncherKind::kRefused)) {
      Result<protocol::Refused> refused = protocol::Decode<protocol::Refused>(packet->bytes);
      return done(refused ? refused->error.ToError() : refused.error());
    }
    if (envelope && envelope->type != protocol::NameOf(Reply::kKind)) {
      return done(Error(ErrorCode::kInternal,
                        "the launcher answered '" + envelope->type + "' to a request for '" +
                            std::string(protocol::NameOf(Reply::kKind)) + "'"));
    }
    done(protocol::Decode<Reply>(packet->bytes));
  });
  Result<void> sent = to_launcher_.Send(protocol::Encode(request), fds);
  if (!sent) {
    // Answered with the error from Tick; the launcher never saw it.
    launcher_calls_.FailLater(request.req, sent.error().WithContext("cannot reach the launcher"));
  }
}

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_EXECUTOR_SERVER_H_

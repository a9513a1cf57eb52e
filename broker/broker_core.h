// BrokerCore: the broker's state machine, free of sockets. It handles one
// decoded client request at a time, runs the policy, keeps the max-time
// and kill timers, and applies executor events. The event loop
// (broker_server.h) owns the sockets and attach streams.
//
// Nothing here waits for the executor. A request that needs it (a submit,
// a start the policy planned) sends its call and returns; the call's
// completion continues the work and answers the client. While a job's call
// is in flight its JobRecord says so (JobPhase), so the job keeps its place
// in the queue, and a request that would overlap the call waits for it or
// is refused.
//
// Answers that acknowledge a change (a submission, a removal, a new
// max-time) wait for the change to be on disk: Flush() writes everything
// that changed since the last Flush with one journal append and one
// fdatasync, then sends them. The event loop calls Flush once per turn, so
// one flush covers every acknowledgment of that turn (group commit).
#ifndef HPCB_BROKER_BROKER_CORE_H_
#define HPCB_BROKER_BROKER_CORE_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "broker/clock.h"
#include "broker/daemon_config.h"
#include "broker/executor_channel.h"
#include "broker/job_record.h"
#include "broker/output_retries.h"
#include "broker/permissions.h"
#include "broker/queue_store.h"
#include "broker/scheduler.h"
#include "protocol/client_messages.h"
#include "protocol/executor_messages.h"

namespace hpcb::broker {

inline constexpr double kKillGraceS = 10;

struct CoreOptions {
  std::int64_t max_lifetime_s = 86400;
  std::int64_t keep_finished = 50;
  bool list_is_public = false;
  // Non-root daemon: only this uid may submit.
  std::optional<uid_t> only_uid;
  // Queued jobs one uid may have; further submissions are refused.
  std::int64_t max_queued_per_user = 10000;
  std::string policy;  // --schedule, for `dispatch info`
  // The machine's GPUs (ids 0..gpu_count-1), told to the executor at hello.
  std::int64_t gpu_count = 0;
};

struct Peer {
  uid_t uid = 0;
  int fd = -1;  // the client's connected socket (borrowed)
};

// Where a paged list (protocol::ListReply) stands: what was asked, by
// whom, the last id sent, and the bytes sent so far.
struct ListCursor {
  protocol::ListRequest request;
  uid_t uid = 0;
  std::uint64_t after = 0;
  std::size_t sent = 0;
};

struct Response {
  std::string frame;                    // the JSON reply; empty: close, no reply
  std::optional<std::uint64_t> attach;  // stream this job's output next
  std::optional<ListCursor> list;       // more pages follow (ListPage)
};

// Where the answer to one request goes. Called exactly once, at once or
// later (after the executor answered, or after the journal write).
using Respond = std::function<void(Response)>;

class BrokerCore {
 public:
  BrokerCore(CoreOptions options, Scheduler& scheduler, ExecutorChannel& executor,
             const Clock& clock, const Permissions& permissions, QueueStore* store)
      : options_(std::move(options)),
        scheduler_(scheduler),
        executor_(executor),
        clock_(clock),
        permissions_(permissions),
        store_(store) {}

  // Adopts a loaded queue file, says Hello, reads what the executor holds
  // (page by page) and reconciles the two.
  Result<void> Start(QueueFile loaded);

  // `text` is one whole frame.
  void Handle(const Peer& peer, const std::string& text, Respond respond);

  // Executor events, timers and scheduling; call at least once a second.
  void Tick();
  void OnExited(const protocol::JobExited& event);
  // The pass that follows a turn's exit events: what they freed is placed
  // at once; timers and delivery retries wait for the next Tick (each is a
  // walk over every unfinished job, which a burst would pay per job end).
  void AfterExits() { Schedule(); }
  // Persists what changed since the last call, then sends the answers that
  // waited for it (or, if the write failed, what each says instead).
  void Flush();

  // The next page after `cursor` (moved on); the cursor is spent when the
  // page says no more follow. Past kMaxListBytes in all, the page is an
  // error naming the cap instead.
  std::string ListPage(ListCursor& cursor, bool* more);
  static constexpr std::size_t kListPageBytes = std::size_t{1} << 20;
  static constexpr std::size_t kMaxListBytes = std::size_t{256} << 20;

  const JobRecord* Find(std::uint64_t id) const;
  void OpenOutput(std::uint64_t id, ExecutorChannel::Done<UniqueFd> done) {
    executor_.OpenOutput(id, std::move(done));
  }
  // Writes the jobs marked changed since the last Persist (as records, or
  // as removals when gone) to the journal, or the whole queue as a new
  // snapshot when `compact` or the store asks for it. Ok means on disk.
  Result<void> Persist(bool compact = false);
  QueueFile Snapshot() const;
  std::uint64_t next_id() const { return next_id_; }
  // The executor stopped answering even the question of what became of a
  // job: the broker cannot trust its books and must be restarted.
  bool executor_lost() const { return executor_lost_; }

 private:
  // A kept output (output_error) is tried again after a back-off
  // (output_retries.h); `first_s` is the first wait.
  void RetryLater(const JobRecord& job, double first_s = OutputRetries::kFirstRetryS);
  // Asks the executor to deliver the kept outputs whose retry is due.
  void RetryDeliveries();
  void OnRedelivered(std::uint64_t id, const Result<protocol::OutputReply>& reply);
  // Where a kept output now is: delivered (no error) or still kept.
  void AdoptDelivery(std::uint64_t id, const std::optional<std::string>& dest,
                     const std::optional<std::string>& error);

  // An answer that may only go out once the change it acknowledges is on
  // disk; `if_lost` builds the answer (and undoes what it must) when the
  // write failed.
  struct DurableAnswer {
    Respond respond;
    Response response;
    std::function<Response(const Error&)> if_lost;
  };

  // A job's record from what its submission asked for: the demand, the
  // defaulted budget, the clamped max-time. Submit and the rebuild of a
  // lost job (Start) go through it, so both book exactly the same job.
  Result<JobRecord> RecordFor(std::uint64_t id, const protocol::JobRequest& request) const;
  // A job the root side holds but the queue file lost, rebuilt from the
  // executor's record of it. `element`: an unstarted element, from its
  // array's record (RebuildElements logs for the whole array).
  struct ElementOf {
    std::uint64_t array = 0;
    std::uint32_t index = 0;
  };
  void Rebuild(const protocol::JobSummary& summary, std::optional<ElementOf> element = {});
  void Submit(const Peer& peer, const std::string& text, Respond respond);
  void CompleteSubmit(std::uint64_t id, protocol::SubmitRequest request,
                      Result<protocol::RegisterReply> reply, Respond respond);
  // The first page of a list; `response.list` is set when more follow.
  Result<std::string> List(const Peer& peer, const std::string& text, Response& response);

  void Kill(const Peer& peer, std::uint64_t id, Respond respond);
  // `dispatch hold` (on) and `release`: the owner's or an admin's, for a
  // queued job.
  void Hold(const Peer& peer, std::uint64_t id, bool on, Respond respond);
  Result<std::string> Attach(const Peer& peer, std::uint64_t id, Response& response);
  void Field(const Peer& peer, const std::string& text, Respond respond);
  void Output(const Peer& peer, const std::string& text, Respond respond);
  std::string Info() const;
  // `dispatch drain` (on) and `dispatch resume` (off); admins only.
  void SetDraining(const Peer& peer, bool on, Respond respond);
  // --after: every id an existing job `peer` may see (the attach rule, or
  // any job with --list-is-public); duplicates dropped.
  Result<std::vector<std::uint64_t>> CheckAfter(const Peer& peer,
                                                const std::vector<std::uint64_t>& after) const;
  // Ends, without running, every queued job a dependency failed (in id
  // order, so a chain fails in one pass).
  void ResolveDependencies();
  Result<JobRecord*> Lookup(const Peer& peer, std::uint64_t id);

  // job_arrays.cc
  // The elements of array `array` still recorded, in index order.
  std::vector<std::uint64_t> ElementsOf(std::uint64_t array) const;
  // Job `id`, or every element of array `id`, each the caller's to act on.
  Result<std::vector<JobRecord*>> LookupJobs(const Peer& peer, std::uint64_t id);
  // `dispatch attach` of array `array`: its one queued or running element;
  // if none is, the one that ended last. kFailedPrecondition, naming them
  // (ARRAY_INDEX), when several are queued or running.
  Result<std::uint64_t> ElementToAttach(const Peer& peer, std::uint64_t array);
  // A registered array (`array` its record while registering) becomes its
  // elements' records, queued; answers the submission.
  void ExpandArray(JobRecord& array, const protocol::SubmitRequest& request, Respond respond);
  // Element `job` has its own spec on the root side now, or ended without
  // one: once no element needs it, the array's spec is forgotten.
  void ElementMadeOrGone(JobRecord& job);
  // For each throttled array (`%N`), how many more elements may start now.
  std::map<std::uint64_t, std::uint32_t> ThrottledRoom() const;
  // Array `array` (the root side's record, `held` all it holds) after the
  // queue file lost some of its elements: each element that has a spec
  // of its own was rebuilt from it and is marked as the array's here;
  // each that has none (not started) is rebuilt, queued, from the array's.
  void RebuildElements(const protocol::JobSummary& array,
                       const std::map<std::uint64_t, protocol::JobSummary>& held);
  void AnswerWhenWritten(Respond respond, Response response,
                         std::function<Response(const Error&)> if_lost = nullptr);
  // A submission whose command dispatch found it cannot execute: ended at
  // once, as a job that failed to start.
  void FailUnrunnable(JobRecord& job, const std::string& why, Respond respond);

  void Schedule();
  // Queued jobs in id order and the jobs holding a placement, as the
  // scheduler wants them. A job still waiting for a dependency is left
  // out, as is every queued job while draining: a policy never sees them,
  // so none of them blocks the head of the queue.
  void CollectForScheduler(std::vector<QueuedJob>& queue, std::vector<RunningJob>& running) const;
  // The placement `job` (just added, newest of all) gets right now, already
  // reserved; nullopt when it has to wait. Older jobs the same pass places
  // are started on the spot.
  std::optional<broker::Start> PlaceNewJob(const JobRecord& job);
  protocol::StartJob StartRequest(const JobRecord& job, const Placement& placement) const;
  // The policy placed queued job `start.id`: its placement is held, and its
  // start sent (or, while it is still registering, sent once it is).
  void StartPlanned(broker::Start& start);
  void SendStart(JobRecord& job);
  // Books the executor's answer to starting `job`: running, or finished
  // with an error and its placement released.
  void ApplyStart(JobRecord& job, const Result<protocol::StartReply>& reply);
  // Placed, and its start sent and not yet answered: to its owner it is
  // running (the answer to its `new` said so), to `list` still queued.
  static bool SpawnUnderWay(const JobRecord& job) {
    return job.queued() && job.holds_placement && job.phase == JobPhase::kStarting;
  }
  // The answer to a StartJob, or to a start made with a registration.
  void OnStartReply(std::uint64_t id, const Result<protocol::StartReply>& reply);
  // A start whose answer never came: asks the executor what became of it.
  void ReconcileStart(std::uint64_t id, const Error& why);
  // A start found to have gone through (its answer, or the executor's list):
  // an end heard of first gives back the placement, else a kill made while
  // it was starting is sent.
  void KnownToHaveStarted(JobRecord& job);
  // Gives back the placement of a job the executor said has ended
  // (JobExited::delivering), once it is known to have started.
  void ReleaseEnded(JobRecord& job);
  void CheckTimers();
  // Who else holds a change durably; see MarkChanged.
  enum class Held { kOnlyHere, kAlsoOnRootSide };
  void Finish(JobRecord& job, std::optional<std::int64_t> exit_code, double end_time,
              Held held = Held::kOnlyHere);
  void ApplyRetention();
  void SendSignal(JobRecord& job, protocol::SignalKind signal, protocol::SignalNote note);
  // Asks the executor, once per job, to drop its spec; sent by Flush once
  // the queue file records why, so no restart finds a job it cannot run.
  void ForgetOnExecutor(std::uint64_t id);
  void SendDueForgets(bool saved);
  // The executor's answer to a forget: a retention victim's record goes,
  // another may go at retention's next pass; with no answer, the forget is
  // sent again.
  void OnForgetAnswered(std::uint64_t id, const Result<protocol::Ack>& ack);
  // Forgets an array's spec once none of its elements needs it.
  void ForgetArray(std::uint64_t array);
  std::size_t QueuedJobsOf(uid_t uid);
  // `id` changed, or was handed out, or was removed: the next Persist
  // writes it. Every change to jobs_ or next_id_ goes through here.
  //
  // The bargain: a change the root side already holds on disk (a
  // registration it answered with the spec durable, a start or an end it
  // reported) is journalled with the turn, before its answer, so a crash
  // of the broker finds it, but does not wait for an fdatasync of its own:
  // after a power cut the start-up reconciliation (Start) re-reads it from
  // the launch specs. A fact only the broker holds (dependencies, drain, a
  // removal, a kill, a changed limit, a later delivery, why a job was
  // ended) makes the turn sync before answering.
  void MarkChanged(std::uint64_t id, Held held = Held::kOnlyHere) {
    changed_.insert(id);
    if (held == Held::kOnlyHere) sync_due_ = true;
    touched_.Note(id);
  }

  // The passes over every job (retention, dependency resolution, the
  // per-user count of queued jobs) are kept to what changed, so that a
  // submission costs the same at any queue length. Each pass keeps the ids
  // marked changed since it last looked, and looks at every job only when
  // one of them can matter to it (MarkChanged is called before or after
  // the change itself, so the job is looked at when the pass runs).
  struct Touched {
    std::set<std::uint64_t> for_retention, for_dependencies, for_counts;
    // Set at Start (jobs loaded, rebuilt): each pass looks at every job once.
    bool retention_all = true, dependencies_all = true, counts_all = true;
    void Note(std::uint64_t id) {
      for_retention.insert(id);
      for_dependencies.insert(id);
      for_counts.insert(id);
    }
    void All() { retention_all = dependencies_all = counts_all = true; }
  };
  // Whether a pass of retention / dependency resolution can find anything
  // new, from the jobs changed since the last one.
  bool RetentionDue();
  bool DependenciesDue();
  // Whether one of `touched` (or, with `all`, every job) `matters` to a
  // pass (a job that is gone comes as null); both are then cleared.
  bool PassDue(bool& all, std::set<std::uint64_t>& touched,
               const std::function<bool(const JobRecord*)>& matters) const;
  // Queued, placed nowhere, and some job it waits for has not ended.
  bool WaitsForDependencies(const JobRecord& job) const;
  Touched touched_;
  // Queued jobs by uid (for --max-queued-per-user), and each counted job's uid.
  std::map<uid_t, std::size_t> queued_count_;
  std::map<std::uint64_t, uid_t> counted_queued_;

  CoreOptions options_;
  Scheduler& scheduler_;
  ExecutorChannel& executor_;
  const Clock& clock_;
  const Permissions& permissions_;
  QueueStore* store_;
  std::map<std::uint64_t, JobRecord> jobs_;
  OutputRetries output_retries_;
  std::uint64_t next_id_ = 1;
  // Every job below this id is done (or gone). Done is final and new ids
  // only grow, so it only moves up; the scans for queued and running jobs
  // start at it, and a queue with thousands of finished jobs behind it
  // costs them nothing. Reset when Start adds jobs of any id.
  mutable std::uint64_t unfinished_from_ = 0;
  // The first job that is not done, moving unfinished_from_ up to it.
  std::map<std::uint64_t, JobRecord>::iterator FirstUnfinished();
  std::map<std::uint64_t, JobRecord>::const_iterator FirstUnfinished() const;
  std::set<std::uint64_t> changed_;  // not yet persisted
  bool sync_due_ = false;            // changed_ holds a fact only the broker has
  std::vector<DurableAnswer> awaiting_write_;
  std::vector<std::uint64_t> forgets_due_;
  // Arrays whose spec the root side keeps: how many elements have no spec
  // of their own yet and have not ended.
  std::map<std::uint64_t, std::size_t> array_unmade_;
  // Arrays whose spec's forget is unanswered: their elements that ended
  // unstarted are kept meanwhile, as the spec still lists them.
  std::set<std::uint64_t> arrays_forgetting_;
  bool executor_lost_ = false;
  bool draining_ = false;
  // The drain flag changed and is not on disk: the next Persist compacts
  // (the journal holds job records only).
  bool draining_unsaved_ = false;
};

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_BROKER_CORE_H_

// BrokerCore: the broker's state machine, free of sockets. It handles one
// decoded client request at a time, runs the policy, keeps the max-time
// and kill timers, and applies executor events. The event loop
// (broker_server.h) owns the sockets and attach streams.
#ifndef HPCB_BROKER_BROKER_CORE_H_
#define HPCB_BROKER_BROKER_CORE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "broker/clock.h"
#include "broker/executor_channel.h"
#include "broker/job_record.h"
#include "broker/permissions.h"
#include "broker/queue_store.h"
#include "broker/scheduler.h"
#include "protocol/daemon_config.h"
#include "protocol/executor_messages.h"

namespace hpcb::broker {

inline constexpr double kKillGraceS = 10;

struct CoreOptions {
  std::int64_t max_lifetime_s = 86400;
  std::int64_t keep_finished = 50;
  bool list_is_public = false;
  // Non-root daemon: only this uid may submit.
  std::optional<uid_t> only_uid;
};

struct Peer {
  uid_t uid = 0;
  int fd = -1;  // the client's connected socket (borrowed)
};

struct Response {
  std::string frame;                      // the JSON reply
  std::optional<std::uint64_t> attach;    // stream this job's output next
};

class BrokerCore {
 public:
  BrokerCore(CoreOptions options, Scheduler& scheduler, ExecutorChannel& executor,
             const Clock& clock, const Permissions& permissions, QueueStore* store)
      : options_(options), scheduler_(scheduler), executor_(executor), clock_(clock),
        permissions_(permissions), store_(store) {}

  // Adopts a loaded queue file, says Hello and reconciles.
  Result<void> Start(QueueFile loaded);

  // `text` is one whole frame. nullopt: close without a reply.
  std::optional<Response> Handle(const Peer& peer, const std::string& text);

  // Timers, executor events, scheduling; call at least once a second.
  void Tick();
  void OnExited(const protocol::JobExited& event);

  const JobRecord* Find(std::uint64_t id) const;
  Result<UniqueFd> OpenOutput(std::uint64_t id) { return executor_.OpenOutput(id); }
  // Writes the jobs marked changed since the last Persist (as records, or
  // as removals when gone) to the journal, or the whole queue as a new
  // snapshot when `compact` or the store asks for it. Ok means on disk.
  Result<void> Persist(bool compact = false);
  QueueFile Snapshot() const;
  std::uint64_t next_id() const { return next_id_; }

 private:
  Result<std::string> Submit(const Peer& peer, const std::string& text);
  Result<std::string> List(const Peer& peer, const std::string& text);
  Result<std::string> Kill(const Peer& peer, std::uint64_t id);
  Result<std::string> Field(const Peer& peer, const std::string& text);
  Result<JobRecord*> Lookup(const Peer& peer, std::uint64_t id);

  void Schedule();
  // Queued jobs in id order and the running jobs holding a placement, as
  // the scheduler wants them.
  void CollectForScheduler(std::vector<QueuedJob>& queue, std::vector<RunningJob>& running) const;
  // The placement `job` (not yet in jobs_, newest of all) would get right
  // now, already reserved; nullopt when it has to wait. Older jobs the
  // same pass places are started on the spot.
  std::optional<broker::Start> PlaceNewJob(const JobRecord& job);
  protocol::StartJob StartRequest(const JobRecord& job, const Placement& placement) const;
  // Asks the executor to start the queued job the policy placed on `start`
  // (a job gone or no longer queued gets its placement released).
  void StartPlanned(broker::Start& start, double now);
  // Books the executor's answer to starting `job` on `start`: running, or
  // finished with an error and its placement released.
  void ApplyStart(JobRecord& job, broker::Start& start, const Result<protocol::StartReply>& reply,
                  double now);
  void CheckTimers();
  void Finish(JobRecord& job, std::optional<std::int64_t> exit_code, double end_time);
  void ApplyRetention();
  void SendSignal(JobRecord& job, const char* signal, const char* note);
  // `id` changed, or was handed out, or was removed: the next Persist
  // writes it. Every change to jobs_ or next_id_ goes through here.
  void MarkChanged(std::uint64_t id) { changed_.insert(id); }

  CoreOptions options_;
  Scheduler& scheduler_;
  ExecutorChannel& executor_;
  const Clock& clock_;
  const Permissions& permissions_;
  QueueStore* store_;
  std::map<std::uint64_t, JobRecord> jobs_;
  std::uint64_t next_id_ = 1;
  std::set<std::uint64_t> changed_;  // not yet persisted
};

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_BROKER_CORE_H_

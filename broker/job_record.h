// JobRecord: everything the broker remembers about one job, and the queue
// file's top-level object. Serialised with the protocol codec (cereal JSON).
#ifndef HPCB_BROKER_JOB_RECORD_H_
#define HPCB_BROKER_JOB_RECORD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/placement.h"
#include "common/base/result.h"
#include "protocol/codec.h"
#include "protocol/job_state.h"
#include "protocol/job_usage.h"

namespace hpcb::broker {

using protocol::JobReason;
using protocol::JobState;

// A call to the executor in flight for a job (kept in memory only: a
// restart asks the executor what became of it).
enum class JobPhase {
  kIdle,
  kRegistering,  // its RegisterJob (maybe with a start) is unanswered
  kStarting,     // its StartJob is unanswered
  // Retention dropped it and its ForgetJob is unanswered: the record stays
  // (forget_unanswered says why) and goes with the answer.
  kForgetting,
};

struct JobRecord {
  std::uint64_t id = 0;
  std::string user;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::vector<std::string> argv;
  std::string cwd;
  JobDemand demand;                  // mem_gib 0 = untracked
  std::optional<double> max_mem_gb;  // budget shown to users
  bool mem_defaulted = false;
  std::int64_t max_time_s = 0;
  JobState state = JobState::kQueued;
  double submit_time = 0;
  std::optional<double> start_time;
  std::optional<double> end_time;
  std::optional<std::int64_t> exit_code;
  std::optional<JobReason> reason;
  std::optional<std::string> detail;  // why it ended in error, for its owner
  Placement placement;                // valid while running (and after)
  bool holds_placement = false;       // reserved in the pool right now
  JobPhase phase = JobPhase::kIdle;   // not persisted
  // The executor still holds its launch spec (not persisted: a start
  // learns it from the executor's list). Cleared by the one forget it gets.
  bool on_executor = true;
  // That forget is due or sent, and unanswered (not persisted). The record
  // is not dropped meanwhile: a restart before the executor lets go would
  // find the spec without the record, and queue the job again, with none of
  // its dependencies (a job that ended as never to run would then run).
  bool forget_unanswered = false;
  // A start the root side could not make now ("stays queued": the state
  // directory is full, a start from before a restart has not settled) is
  // tried again after a back-off, 0.1 s doubling to 10 s, not every turn.
  // Not persisted.
  double start_retry_at = 0;
  double start_backoff_s = 0;
  // Ended, its output still being delivered: no placement, no timers.
  bool processes_gone = false;
  std::optional<double> term_time;  // SIGTERM sent
  std::optional<double> kill_at;    // next SIGKILL due
  std::optional<std::string> output_dest;
  std::optional<std::string> output_error;  // stdout's, stderr's or both
  std::optional<std::string> error_dest;    // --error: stderr's own file
  std::optional<protocol::JobUsage> usage;  // once done, if it ran
  // Jobs it waits for (`--after`); met ones stay listed. Done jobs keep
  // theirs, so a restart knows why a `dependency` job never ran.
  std::vector<std::uint64_t> after;
  bool after_any = false;  // any ending will do, not only exit 0
  // `dispatch hold`: queued, keeping its place, skipped by every policy
  // until released. Kept in the queue file (a job rebuilt from the root
  // side's records after the file was lost comes back released).
  bool held = false;
  std::optional<std::string> name;  // --name (protocol::CheckJobName)
  // An element of array `array_id` (`--array`): the array has no record of
  // its own; its elements have the ids after it, in index order. Until its
  // first start an element has no launch spec of its own (on_executor is
  // false): the start makes one from the array's (StartJob::array).
  std::optional<std::uint64_t> array_id;
  std::uint32_t array_index = 0;
  std::optional<std::uint32_t> array_throttle;  // `%N`: at most N elements running

  bool queued() const { return state == JobState::kQueued; }
  bool running() const { return state == JobState::kRunning; }
  bool done() const { return state == JobState::kDone; }

  template <class A>
  void Fields(A& ar);
  template <class A>
  void save(A& ar) const {
    const_cast<JobRecord*>(this)->Fields(ar);
  }
  template <class A>
  void load(A& ar) {
    Fields(ar);
  }
  Result<void> Validate() const;
};

// The queue file: {"next_id": N, "jobs": [...], "draining": B}.
struct QueueFile {
  std::uint64_t next_id = 1;
  std::vector<JobRecord> jobs;
  // `dispatch drain`: start nothing. Only in the snapshot: a change of it
  // is always written as a compaction, never as a journal line.
  bool draining = false;
  template <class A>
  void save(A& ar) const {
    protocol::Put(ar, "next_id", next_id);
    protocol::Put(ar, "jobs", jobs);
    protocol::Put(ar, "draining", draining);
  }
  template <class A>
  void load(A& ar) {
    protocol::Get(ar, "next_id", next_id);
    protocol::Get(ar, "jobs", jobs);
    protocol::GetIfPresent(ar, "draining", draining);  // files from before drain
  }
  Result<void> Validate() const;
};

template <class A>
void JobRecord::Fields(A& ar) {
  auto field = [&](const char* key, auto& value) {
    if constexpr (A::is_saving::value) {
      protocol::Put(ar, key, value);
    } else {
      protocol::Get(ar, key, value);
    }
  };
  std::int64_t cpu = demand.cpu;
  std::int64_t gpus = demand.gpus;
  field("id", id);
  field("user", user);
  field("uid", uid);
  field("gid", gid);
  field("argv", argv);
  field("cwd", cwd);
  field("cpu", cpu);
  field("gpu_cores", gpus);
  field("mem_gib", demand.mem_gib);
  field("exclusive", demand.exclusive);
  field("numa_local_mem", demand.numa_local_mem);
  field("numa_local_gpu", demand.numa_local_gpu);
  field("min_gpu_link", demand.min_gpu_link);
  field("max_mem_gb", max_mem_gb);
  field("mem_defaulted", mem_defaulted);
  field("max_time_s", max_time_s);
  field("state", state);
  field("submit_time", submit_time);
  field("start_time", start_time);
  field("end_time", end_time);
  field("exit_code", exit_code);
  field("reason", reason);
  field("detail", detail);
  field("cpus", placement.cpus);
  field("mems", placement.mems);
  field("mem_by_node", placement.mem_by_node);
  field("gpus", placement.gpus);
  field("gpu_link", placement.gpu_link);
  field("spans_nodes", placement.spans_nodes);
  field("term_time", term_time);
  field("kill_at", kill_at);
  field("output_dest", output_dest);
  field("output_error", output_error);
  if constexpr (A::is_saving::value) {
    protocol::Put(ar, "usage", usage);
    protocol::Put(ar, "after", after);
    protocol::Put(ar, "after_any", after_any);
    protocol::Put(ar, "held", held);
    protocol::Put(ar, "name", name);
    protocol::Put(ar, "error_dest", error_dest);
    protocol::Put(ar, "array_id", array_id);
    protocol::Put(ar, "array_index", array_index);
    protocol::Put(ar, "array_throttle", array_throttle);
  } else {
    protocol::GetIfPresent(ar, "usage", usage);  // files written before accounting
    // Files written before dependencies.
    protocol::GetIfPresent(ar, "after", after);
    protocol::GetIfPresent(ar, "after_any", after_any);
    protocol::GetIfPresent(ar, "held", held);              // files written before holds
    protocol::GetIfPresent(ar, "name", name);              // files written before --name
    protocol::GetIfPresent(ar, "error_dest", error_dest);  // and before --error
    protocol::GetIfPresent(ar, "array_id", array_id);      // files written before arrays
    protocol::GetIfPresent(ar, "array_index", array_index);
    protocol::GetIfPresent(ar, "array_throttle", array_throttle);
  }
  if constexpr (!A::is_saving::value) {
    demand.cpu = static_cast<int>(cpu);
    demand.gpus = static_cast<int>(gpus);
    placement.exclusive = demand.exclusive;
  }
}

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_JOB_RECORD_H_

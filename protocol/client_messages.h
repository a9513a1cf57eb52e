// Messages between `dispatch` and the broker (stream socket, framing.h).
//
// A request is a JSON object whose "cmd" is one of new, list, kill, attach,
// job, output, info, drain, resume. A reply has "ok": true plus the fields below, or is an
// ErrorReply
// ({"ok": false, "error": "...", "code": N}). After an ok AttachReply the
// broker sends raw output chunks as further frames; an empty frame ends the
// stream. One request per connection.
#ifndef HPCB_PROTOCOL_CLIENT_MESSAGES_H_
#define HPCB_PROTOCOL_CLIENT_MESSAGES_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/result.h"
#include "protocol/codec.h"
#include "protocol/job_state.h"
#include "protocol/job_usage.h"
#include "protocol/user_requests.h"

namespace hpcb::protocol {

// The "cmd" of a request: a wire enum, dispatched by one switch.
HPCB_WIRE_ENUM(ClientCommand, (kNew, "new"), (kList, "list"), (kKill, "kill"), (kAttach, "attach"),
               (kJob, "job"), (kOutput, "output"), (kInfo, "info"), (kDrain, "drain"),
               (kResume, "resume"), (kHold, "hold"), (kRelease, "release"));

struct SubmitReply {
  std::uint64_t id = 0;
  JobState state = JobState::kQueued;
  std::int64_t max_time_s = 0;
  std::int64_t cpu = 0;
  std::optional<double> max_mem_gb;
  bool mem_defaulted = false;
  std::optional<std::string> output_dest;
  // What `cpu` became: logical cpus in whole physical cores (the placement
  // when the job started at once, else what an idle machine would give).
  std::int64_t granted_cpus = 0;
  std::int64_t granted_cores = 0;
  // The job was recorded as failed to start (SubmitRequest::exec_error).
  std::optional<std::string> start_error;
  bool draining = false;  // the machine is drained: it waits for resume
  // An array (`--array`): how many elements, with ids id+1 onwards; shown
  // as ID_INDEX.
  std::uint32_t array_elements = 0;

  static constexpr bool kOk = true;
  template <class F>
  void Fields(F&& field) {
    HPCB_FIELD_LIST(id, state, max_time_s, cpu, max_mem_gb, mem_defaulted, output_dest,
                    granted_cpus, granted_cores);
    HPCB_MISSABLE_FIELDS(start_error, draining, array_elements);
  }
};

inline constexpr std::size_t kMaxListIds = 4096;

// A job's `--name`: 1 to kMaxJobNameBytes of ASCII letters, digits and
// kJobNamePunctuation, not starting with '-'. No space, '/', ',' or
// control character: a name is printed in a column, typed after a flag,
// and passed to Slurm (squeue --name takes a comma-separated list).
inline constexpr std::size_t kMaxJobNameBytes = 64;
inline constexpr std::string_view kJobNamePunctuation = "._-+@:=";
// The error says what a name may hold; it does not quote `name`, which
// may hold anything.
Result<void> CheckJobName(std::string_view name);

struct ListRequest {
  bool all = false;
  bool finished = false;
  // Only these jobs (`dispatch wait` polls just its own); empty: every job
  // `all` and `finished` let through.
  std::vector<std::uint64_t> ids;
  // Only the jobs with this --name (kill/wait/attach --name).
  std::optional<std::string> name;
  // An array's elements as one row (JobRow::array_indices): what plain
  // `list` shows, so a 10,000-element array costs one row, not 10,000.
  bool fold_arrays = false;
  static constexpr std::string_view kCmd = "list";
  template <class F>
  void Fields(F&& field) {
    HPCB_FIELD_LIST(all, finished, ids);
    HPCB_MISSABLE_FIELDS(name, fold_arrays);
  }
  Result<void> Validate() const;
};

// One row of `dispatch list`. Times are epoch seconds (wall clock).
struct JobRow {
  std::string user;
  std::uint64_t id = 0;
  std::vector<std::string> argv;
  std::optional<std::string> name;  // --name
  std::optional<double> start_time;
  std::optional<double> uptime_s;  // elapsed; final once done
  std::int64_t max_time_s = 0;
  bool exclusive = false;
  std::optional<double> max_mem_gb;
  bool mem_defaulted = false;
  bool mem_spans_nodes = false;
  std::int64_t cpu = 0;
  std::int64_t gpus = 0;
  std::optional<std::string> gpu_link;  // raw worst-pair label
  JobState state = JobState::kQueued;
  std::optional<std::int64_t> exit_code;
  std::optional<JobReason> reason;
  std::optional<std::string> detail;  // why it ended in error
  std::optional<std::string> output_dest;
  std::optional<std::string> output_error;
  std::optional<std::string> error_dest;  // --error: stderr's own file
  std::optional<JobUsage> usage;          // once done, if it ran
  std::vector<std::uint64_t> after;       // dependencies not yet met (queued only)
  bool after_any = false;
  bool held = false;  // queued, skipped until released (`dispatch hold`)
  // An element of an array (`--array`): shown as ARRAY_INDEX.
  std::optional<std::uint64_t> array_id;
  std::optional<std::uint32_t> array_index;
  // Folded (ListRequest::fold_arrays): the first listed element's row
  // standing for every listed element of its array: their indices
  // ("1-3,7") and how many are in each state ("running", "queued",
  // "held", "done").
  std::optional<std::string> array_indices;
  std::map<std::string, std::uint32_t> array_counts;

  template <class F>
  void Fields(F&& field) {
    HPCB_FIELD_LIST(user, id, argv, start_time, uptime_s, max_time_s, exclusive, max_mem_gb,
                    mem_defaulted, mem_spans_nodes, cpu, gpus, gpu_link, state, exit_code, reason,
                    detail, output_dest, output_error, usage, after, after_any);
    HPCB_MISSABLE_FIELDS(held, name, error_dest, array_id, array_index, array_indices,
                         array_counts);
  }
};

// Whether a finished job's stdout reached its place: it has no output
// error, or one that says only --error's file was not saved.
inline bool StdoutDelivered(const std::optional<std::string>& output_error) {
  return !output_error || output_error->starts_with(kStderrOnlyError);
}

// A list comes in pages, each a frame of its own of about 1 MiB of rows at
// most, built only once the one before it was written (so a client that
// does not read holds one page of the daemon's memory); `more` says
// another follows. The reader appends the pages' jobs in order.
struct ListReply {
  std::vector<JobRow> jobs;
  double now = 0;
  bool draining = false;  // no queued job is started (`dispatch drain`)
  bool more = false;
  template <class A>
  void save(A& ar) const {
    Put(ar, "ok", true);
    Put(ar, "jobs", jobs);
    Put(ar, "now", now);
    Put(ar, "draining", draining);
    if (more) Put(ar, "more", more);
  }
  template <class A>
  void load(A& ar) {
    Get(ar, "jobs", jobs);
    Get(ar, "now", now);
    Get(ar, "draining", draining);
    GetIfPresent(ar, "more", more);
  }
};

// kill, attach, hold and release address one job.
struct JobIdRequest {
  ClientCommand cmd = ClientCommand::kKill;  // kill, attach, hold or release
  std::uint64_t id = 0;
  HPCB_FIELDS(cmd, id)
};

// hold and release: whether the job is held now, and whether this request
// changed that (holding a held job, or releasing one that is not, is not an
// error).
struct HoldReply {
  bool held = false;
  bool changed = false;
  static constexpr bool kOk = true;
  HPCB_FIELDS(held, changed)
};

struct KillReply {
  KillOutcome state = KillOutcome::kRemoved;
  static constexpr bool kOk = true;
  HPCB_FIELDS(state)
};

struct AttachReply {
  JobState state = JobState::kQueued;
  std::optional<std::string> output_dest;
  std::optional<std::string> output_error;
  static constexpr bool kOk = true;
  HPCB_FIELDS(state, output_dest, output_error)
};

// `dispatch job ID FIELD ACTION [VALUE]`.
struct JobFieldRequest {
  std::uint64_t id = 0;
  std::string field;   // "max-time"
  std::string action;  // get, set, add
  std::optional<std::int64_t> value;
  static constexpr std::string_view kCmd = "job";
  template <class F>
  void Fields(F&& visit) {  // `field` is a member here
    visit("id", id);
    visit("field", field);
    visit("action", action);
    visit("value", value);
  }
};

struct JobFieldReply {
  std::int64_t value = 0;
  std::optional<std::int64_t> before;
  static constexpr bool kOk = true;
  HPCB_FIELDS(value, before)
};

struct OutputAnswer {
  std::string output_dest;  // where the output now is
  bool already = false;     // it had been delivered before this request
  static constexpr bool kOk = true;
  HPCB_FIELDS(output_dest, already)
};

// `dispatch info`: the machine and the daemon, no one's jobs. Requests
// that carry nothing but their "cmd" (info, drain, resume) share one type.
struct BareRequest {
  ClientCommand cmd = ClientCommand::kInfo;
  HPCB_FIELDS(cmd)
};

// One resource of one NUMA node. `reserved` is held back for the system
// (--reserve-cpu, --reserve-mem), `in_use` held by running jobs, and
// free = total - reserved - in_use. Counts for cpus and gpus, GiB for memory.
template <class T>
struct Amounts {
  T total{};
  T reserved{};
  T in_use{};
  T free{};
  HPCB_FIELDS(total, reserved, in_use, free)
};

struct NodeInfo {
  std::int64_t node = 0;
  Amounts<std::int64_t> cpus;
  // Absent when memory is booked machine-wide (InfoReply::memory).
  std::optional<Amounts<double>> mem_gib;
  Amounts<std::int64_t> gpus;
  HPCB_FIELDS(node, cpus, mem_gib, gpus)
};

struct InfoReply {
  std::string policy;
  bool draining = false;
  std::int64_t queued = 0;   // queued jobs, waiting ones included
  std::int64_t waiting = 0;  // of those, waiting for dependencies
  std::int64_t running = 0;
  std::vector<NodeInfo> nodes;
  std::optional<Amounts<double>> mem_gib;  // machine-wide memory, if booked so
  static constexpr bool kOk = true;
  HPCB_FIELDS(policy, draining, queued, waiting, running, nodes, mem_gib)
};

// `dispatch drain` / `dispatch resume`.
struct DrainReply {
  bool draining = false;
  bool changed = false;  // false: it already was so
  static constexpr bool kOk = true;
  HPCB_FIELDS(draining, changed)
};

struct ErrorReply {
  std::string error;
  std::uint8_t code = static_cast<std::uint8_t>(ErrorCode::kInternal);
  template <class A>
  void save(A& ar) const {
    Put(ar, "ok", false);
    Put(ar, "error", error);
    Put(ar, "code", code);
  }
  template <class A>
  void load(A& ar) {
    Get(ar, "error", error);
    Get(ar, "code", code);
  }
  static ErrorReply From(const Error& e) {
    return {e.message(), static_cast<std::uint8_t>(e.code())};
  }
};

// Reads the "ok" flag of a reply.
Result<bool> PeekOk(std::string_view text);

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_CLIENT_MESSAGES_H_

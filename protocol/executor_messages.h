// Messages between the broker and the executor (SOCK_SEQPACKET, framing.h;
// type/req envelope and coded errors, envelope.h).
//
// Both sides are asynchronous: the broker may have many requests
// outstanding and the executor answers each when its work is done, in any
// order (a registration that must wait for the launcher to check an output
// path does not hold up another user's). Every request is answered exactly
// once, by its reply kind or by an Ack carrying the error when it could not
// even be decoded. JobExited is an event (req 0), sent whenever a started
// job has ended and its output has been dealt with.
//
// The broker never sends a path the executor acts on as root, nor a uid,
// nor what a job runs: RegisterJob carries the client's connected socket
// (SCM_RIGHTS); the executor reads the submitter's identity from it with
// SO_PEERCRED and the submission from the socket itself. Later requests
// name a job only by id.
//
// The Validate() of a message only the broker decodes (the executor's
// replies and events) is defined in broker_checks.cc, which the root
// binaries do not link: they only encode those, and a root binary that
// decoded one would fail to link.
#ifndef HPCB_PROTOCOL_EXECUTOR_MESSAGES_H_
#define HPCB_PROTOCOL_EXECUTOR_MESSAGES_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/result.h"
#include "protocol/codec.h"
#include "protocol/envelope.h"
#include "protocol/job_types.h"
#include "protocol/job_usage.h"

namespace hpcb::protocol {

// 3: every message carries a req id and a typed kind; errors are coded.
// 5: a start made with a registration is answered on its own (start.req).
// 7: a start carries its placement as one PlacementRecord.
// 8: no output_update event: the broker asks for a kept output's retries.
inline constexpr std::int64_t kProtocolVersion = 8;

HPCB_WIRE_ENUM(ExecutorKind, (kHello, "hello"), (kHelloReply, "hello_reply"),
               (kListJobs, "list_jobs"), (kListJobsReply, "list_jobs_reply"),
               (kRegister, "register"), (kRegisterReply, "register_reply"), (kStart, "start"),
               (kStartReply, "start_reply"), (kSignal, "signal"), (kForget, "forget"),
               (kOpenOutput, "open_output"), (kAck, "ack"), (kExited, "exited"),
               (kDeliverAgain, "deliver_again"), (kOutputReply, "output_reply"));

// Where the root side's record of a job stands (its launch spec).
HPCB_WIRE_ENUM(SpecState, (kRegistered, "registered"), (kRunning, "running"), (kExited, "exited"));

HPCB_WIRE_ENUM(SignalKind, (kTerm, "term"), (kKill, "kill"));

// The fixed line the executor appends to a job's output before signalling
// it: none, or the time-limit line (which quotes SignalJob::limit_s).
HPCB_WIRE_ENUM(SignalNote, (kNone, ""), (kTimeout, "timeout"), (kKilled, "killed"));

// broker -> executor, first message. Reply: HelloReply.
struct Hello {
  static constexpr ExecutorKind kKind = ExecutorKind::kHello;
  std::uint64_t req = 0;
  std::int64_t version = kProtocolVersion;
  // The machine's GPUs as the broker found them (its own `nvidia-smi -L`,
  // run as the broker user): the ids a start may name are 0..gpu_count-1.
  // Taken from the broker so that root never runs nvidia-smi; the gpus are
  // the broker's to hand out anyway, and an id with no card behind it
  // reaches no device (the launcher hides the card nodes it finds itself).
  std::int64_t gpu_count = 0;
  HPCB_FIELDS(version, gpu_count)
  Result<void> Validate() const;
};

struct HelloReply {
  static constexpr ExecutorKind kKind = ExecutorKind::kHelloReply;
  std::uint64_t req = 0;
  std::uint64_t jobs = 0;  // launch specs held; ListJobs pages through them
  // Above every id the root side ever held, forgotten ones included: ids
  // are never handed out twice, whatever the broker's files say.
  std::uint64_t next_id = 1;
  HPCB_FIELDS(jobs, next_id)
};

// One job the root side holds, as the broker needs it to reconcile: the
// part of its launch spec (executor/launch_spec.h) the broker may see.
struct JobSummary {
  std::uint64_t id = 0;
  SpecState state = SpecState::kRegistered;
  UserIdentity who;
  std::optional<std::string> output_dest;
  std::vector<std::string> argv;
  std::string cwd;
  JobRequest request;
  std::optional<PlacementRecord> placement;  // once started
  double start_time = 0;                     // once running
  // Once exited: how it ended (exit_code as in JobExited), as the root side
  // recorded it, so an end the broker missed is not lost.
  std::optional<std::int64_t> exit_code;
  bool oom = false;
  double end_time = 0;
  std::optional<std::string> output_error;
  std::optional<JobUsage> usage;
  std::optional<std::string> name;  // SubmitRequest::name
  // --error: stderr's own file, from its own `error` buffer, delivered
  // with the output (one output_error for both).
  std::optional<std::string> error_dest;
  // An array (SubmitRequest::array) is registered once and never runs
  // itself; each element is a job of its own, made from it by its start
  // (StartJob::array), its index only in its environment.
  std::vector<std::uint32_t> array;
  // An array's indices whose element was made, in the order they were:
  // saved with the element's own spec, so none is made twice.
  std::vector<std::uint32_t> array_started;
  template <class F>
  void Fields(F&& field) {
    HPCB_FIELD_LIST(id, state, who, output_dest, argv, cwd, request, placement, start_time,
                    exit_code, oom, end_time, output_error);
    // Not in specs (nor from executors) older than accounting, --name,
    // --error and arrays.
    HPCB_MISSABLE_FIELDS(usage, name, error_dest, array, array_started);
  }
};

// broker -> executor: the jobs with ids above `after`, at most `limit` of
// them (fewer when a page would grow past kMaxPageBytes), in id order. Paged so that no number of
// jobs outgrows one message. Also how the broker learns the truth about one job after a call about
// it timed out (after = id - 1, limit = 1). Reply: ListJobsReply (`more`: ask again after the last
// id).
struct ListJobs {
  static constexpr ExecutorKind kKind = ExecutorKind::kListJobs;
  static constexpr std::uint32_t kMaxLimit = 4096;
  static constexpr std::size_t kMaxPageBytes = std::size_t{512} * 1024;
  std::uint64_t req = 0;
  std::uint64_t after = 0;
  std::uint32_t limit = kMaxLimit;
  HPCB_FIELDS(after, limit)
  Result<void> Validate() const;
};

struct ListJobsReply {
  static constexpr ExecutorKind kKind = ExecutorKind::kListJobsReply;
  std::uint64_t req = 0;
  std::vector<JobSummary> jobs;
  bool more = false;
  HPCB_FIELDS(jobs, more)
  Result<void> Validate() const;  // broker_checks.cc
};

// broker -> executor: run a registered job on this placement. Reply:
// StartReply. On failure the executor has already written the reason into
// the job's buffer and delivered it; no JobExited follows.
struct StartJob {
  static constexpr ExecutorKind kKind = ExecutorKind::kStart;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  PlacementRecord placement;
  std::optional<std::uint64_t> memory_max;  // bytes; none = untracked
  // Element `array_index` of registered array `array`: the first start
  // makes job `id` from the array's spec. `id` is the array's id plus one
  // plus the index's place in its list; any other is refused.
  std::optional<std::uint64_t> array;
  std::uint32_t array_index = 0;
  HPCB_FIELDS(id, placement, memory_max, array, array_index)
  Result<void> Validate() const;
};

struct StartReply {
  static constexpr ExecutorKind kKind = ExecutorKind::kStartReply;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  std::optional<WireError> error;
  std::optional<std::string> output_error;  // only with error
  std::int64_t pid = 0;
  double start_time = 0;
  HPCB_FIELDS(id, error, output_error, pid, start_time)
};

// broker -> executor, with the client's connected socket as the only fd,
// on which the client's submission frame is still queued, unread (the
// broker only peeked at it; see queued_frame.h). The executor takes uid/gid
// from SO_PEERCRED on that socket and reads argv, cwd, env and output from
// the frame itself, so none of them passes through the broker's hands;
// the supplementary groups come from SO_PEERGROUPS; it stores the launch
// spec root-only. Reply: RegisterReply.
//
// `start`, when the broker has already placed the job, starts it right
// after registering, exactly as a StartJob would (same checks). This is the
// common submit of an idle machine, and it saves a round trip before the
// job's first instruction. The registration is answered as soon as the
// spec (with its placement) is on disk, with `starting` set: the user's
// acknowledgment never waits for the spawn. The start's own outcome
// follows as a StartReply whose req is `start.req`. A start that ends
// before the launcher is asked (refused, or failed setting up) is instead
// carried in the RegisterReply's `start`, and no StartReply follows.
struct RegisterJob {
  static constexpr ExecutorKind kKind = ExecutorKind::kRegister;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  std::optional<StartJob> start;  // its id must be `id`; its req answers it
  HPCB_FIELDS(id, start)
  Result<void> Validate() const;
};

struct RegisterReply {
  static constexpr ExecutorKind kKind = ExecutorKind::kRegisterReply;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  std::optional<WireError> error;  // e.g. "job 7 already exists"
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::optional<std::string> output_dest;  // resolved file path
  // The outcome of RegisterJob::start, when one was asked for, the
  // registration itself succeeded, and the start ended before the spawn.
  std::optional<StartReply> start;
  // The start is under way; its StartReply (req: RegisterJob::start.req)
  // follows this message.
  bool starting = false;
  HPCB_FIELDS(id, error, uid, gid, output_dest, start, starting)
  Result<void> Validate() const;  // broker_checks.cc
};

// broker -> executor: signal a running job's whole process group (and, for
// kill, its cgroup via cgroup.kill), after appending `note`'s line to its
// output. Reply: Ack.
struct SignalJob {
  static constexpr ExecutorKind kKind = ExecutorKind::kSignal;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  SignalKind signal = SignalKind::kTerm;
  SignalNote note = SignalNote::kNone;
  std::int64_t limit_s = 0;
  HPCB_FIELDS(id, signal, note, limit_s)
};

// broker -> executor: drop a job that will never start or whose history
// the broker no longer keeps (retention): launch spec, job dir (including
// an undelivered buffer), dev entry. Refused for a running job. Reply: Ack.
struct ForgetJob {
  static constexpr ExecutorKind kKind = ExecutorKind::kForget;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  HPCB_FIELDS(id)
};

// broker -> executor: a read-only fd of the job's output buffer, for
// attach. Reply: Ack with the fd attached when ok.
struct OpenOutput {
  static constexpr ExecutorKind kKind = ExecutorKind::kOpenOutput;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  HPCB_FIELDS(id)
};

// The reply to signal, forget and open_output, and to any request the
// executor could not decode (then with the req it could read, else 0).
struct Ack {
  static constexpr ExecutorKind kKind = ExecutorKind::kAck;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  std::optional<WireError> error;
  HPCB_FIELDS(id, error)
};

// executor -> broker, an event (req 0): a started job ended and its output
// was delivered (or kept, with output_error). exit_code: >= 0 exit status,
// negative signal number, none when unknown (ended while we were away).
struct JobExited {
  static constexpr ExecutorKind kKind = ExecutorKind::kExited;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  std::optional<std::int64_t> exit_code;
  bool oom = false;
  double end_time = 0;
  std::optional<std::string> output_error;
  // Something its owner should know about how it ran (its output may be
  // cut short by a full state directory, say).
  std::optional<std::string> note;
  std::optional<JobUsage> usage;  // none for a job that never ran
  // Sent ahead of the real one as soon as the executor sees the job end:
  // its processes are gone, so its cpus and memory may go to others; it
  // stays running to its owner until the event without this flag.
  bool delivering = false;
  template <class F>
  void Fields(F&& field) {
    HPCB_FIELD_LIST(id, exit_code, oom, end_time, output_error, note, usage);
    HPCB_MISSABLE_FIELDS(delivering);
  }
  Result<void> Validate() const;  // broker_checks.cc
};

// broker -> executor: deliver a finished job's kept output again, to where
// it was going, or, with the client's socket attached (its `dispatch output
// --to` frame still queued there, as for RegisterJob), to where the job's
// owner now says; only the owner's own frame can name a new place. Reply:
// OutputReply.
struct DeliverAgain {
  static constexpr ExecutorKind kKind = ExecutorKind::kDeliverAgain;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  HPCB_FIELDS(id)
};

struct OutputReply {
  static constexpr ExecutorKind kKind = ExecutorKind::kOutputReply;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  std::optional<std::string> output_dest;  // where it now is, once delivered
  std::optional<WireError> error;
  HPCB_FIELDS(id, output_dest, error)
};

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_EXECUTOR_MESSAGES_H_

// Messages between the broker and the executor (SOCK_SEQPACKET, framing.h).
//
// Every message is a JSON object with a "type". The broker sends requests
// and waits for the reply to each before sending the next; the executor may
// send JobExited events at any time, including while a request is pending,
// so the broker's channel queues events it reads while waiting.
//
// The broker never sends a path the executor acts on as root, nor a uid,
// nor what a job runs: RegisterJob carries the client's connected socket
// (SCM_RIGHTS); the executor reads the submitter's identity from it with
// SO_PEERCRED and the submission from the socket itself. Later requests
// name a job only by id.
#ifndef HPCB_PROTOCOL_EXECUTOR_MESSAGES_H_
#define HPCB_PROTOCOL_EXECUTOR_MESSAGES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/codec.h"

namespace hpcb::protocol {

// 2: RegisterJob and RegisterReply carry `start` (both roles are always
// started together, but a mismatch should be a refusal, not a field error).
inline constexpr std::int64_t kProtocolVersion = 2;

// broker -> executor, first message. Reply: HelloReply.
struct Hello {
  std::int64_t version = kProtocolVersion;
  template <class A> void save(A& ar) const { Put(ar, "type", std::string("hello")); Put(ar, "version", version); }
  template <class A> void load(A& ar) { Get(ar, "version", version); }
  Result<void> Validate() const;
};

struct HelloReply {
  std::vector<std::uint64_t> registered;  // launch specs held, not started
  std::vector<std::uint64_t> running;     // started and still alive
  bool machine_has_gpus = false;
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("hello_reply")); Put(ar, "registered", registered);
    Put(ar, "running", running); Put(ar, "machine_has_gpus", machine_has_gpus);
  }
  template <class A> void load(A& ar) {
    Get(ar, "registered", registered); Get(ar, "running", running);
    Get(ar, "machine_has_gpus", machine_has_gpus);
  }
  Result<void> Validate() const { return Ok(); }
};

// broker -> executor: run a registered job on this placement. Reply:
// StartReply. On failure the executor has already written the reason into
// the job's buffer and delivered it; no JobExited follows.
struct StartJob {
  std::uint64_t id = 0;
  std::vector<int> cpus;
  std::vector<int> mems;                    // cpuset.mems: charged nodes
  std::optional<std::uint64_t> memory_max;  // bytes; none = untracked
  std::vector<int> gpus;
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("start")); Put(ar, "id", id);
    Put(ar, "cpus", cpus); Put(ar, "mems", mems);
    Put(ar, "memory_max", memory_max); Put(ar, "gpus", gpus);
  }
  template <class A> void load(A& ar) {
    Get(ar, "id", id); Get(ar, "cpus", cpus); Get(ar, "mems", mems);
    Get(ar, "memory_max", memory_max); Get(ar, "gpus", gpus);
  }
  Result<void> Validate() const;
};

struct StartReply {
  std::uint64_t id = 0;
  std::optional<std::string> error;
  std::optional<std::string> output_error;  // only with error
  std::int64_t pid = 0;
  double start_time = 0;
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("start_reply")); Put(ar, "id", id);
    Put(ar, "error", error); Put(ar, "output_error", output_error);
    Put(ar, "pid", pid); Put(ar, "start_time", start_time);
  }
  template <class A> void load(A& ar) {
    Get(ar, "id", id); Get(ar, "error", error); Get(ar, "output_error", output_error);
    Get(ar, "pid", pid); Get(ar, "start_time", start_time);
  }
  Result<void> Validate() const { return Ok(); }
};

// broker -> executor, with the client's connected socket as the only fd,
// on which the client's submission frame is still queued, unread (the
// broker only peeked at it; see queued_frame.h). The executor takes uid/gid
// from SO_PEERCRED on that socket and reads argv, cwd, env and output from
// the frame itself, so none of them passes through the broker's hands;
// checks the output destination as that user, and stores the launch spec
// root-only. Reply: RegisterReply.
//
// `start`, when the broker has already placed the job, starts it right
// after registering, exactly as a StartJob would (same checks); the spec is
// then fsynced once, as running, instead of once per step. This is the
// common submit of an idle machine, and it saves a round trip and a disk
// flush before the job's first instruction.
struct RegisterJob {
  std::uint64_t id = 0;
  std::optional<StartJob> start;  // its id must be `id`
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("register")); Put(ar, "id", id); Put(ar, "start", start);
  }
  template <class A> void load(A& ar) { Get(ar, "id", id); Get(ar, "start", start); }
  Result<void> Validate() const;
};

struct RegisterReply {
  std::uint64_t id = 0;
  std::optional<std::string> error;  // e.g. "cannot save output there: ..."
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::string user;
  std::optional<std::string> output_dest;  // resolved file path
  // The outcome of RegisterJob::start, when one was asked for and the
  // registration itself succeeded.
  std::optional<StartReply> start;
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("register_reply")); Put(ar, "id", id);
    Put(ar, "error", error); Put(ar, "uid", uid); Put(ar, "gid", gid);
    Put(ar, "user", user); Put(ar, "output_dest", output_dest); Put(ar, "start", start);
  }
  template <class A> void load(A& ar) {
    Get(ar, "id", id); Get(ar, "error", error); Get(ar, "uid", uid);
    Get(ar, "gid", gid); Get(ar, "user", user); Get(ar, "output_dest", output_dest);
    Get(ar, "start", start);
  }
  Result<void> Validate() const { return Ok(); }
};

// broker -> executor: signal a running job's whole process group (and, for
// kill, its cgroup via cgroup.kill). `note` picks a fixed line the executor
// appends to the buffer first: "" none, "timeout" the time-limit line
// (which quotes limit_s), "killed" none. Reply: Ack.
struct SignalJob {
  std::uint64_t id = 0;
  std::string signal;  // "term" or "kill"
  std::string note;
  std::int64_t limit_s = 0;
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("signal")); Put(ar, "id", id);
    Put(ar, "signal", signal); Put(ar, "note", note); Put(ar, "limit_s", limit_s);
  }
  template <class A> void load(A& ar) {
    Get(ar, "id", id); Get(ar, "signal", signal); Get(ar, "note", note);
    Get(ar, "limit_s", limit_s);
  }
  Result<void> Validate() const;
};

// broker -> executor: drop a job that will never start or whose history
// the broker no longer keeps (retention): launch spec, job dir (including
// an undelivered buffer), dev entry. Refused for a running job. Reply: Ack.
struct ForgetJob {
  std::uint64_t id = 0;
  template <class A> void save(A& ar) const { Put(ar, "type", std::string("forget")); Put(ar, "id", id); }
  template <class A> void load(A& ar) { Get(ar, "id", id); }
  Result<void> Validate() const { return Ok(); }
};

// broker -> executor: a read-only fd of the job's output buffer, for
// attach. Reply: Ack with the fd attached when ok.
struct OpenOutput {
  std::uint64_t id = 0;
  template <class A> void save(A& ar) const { Put(ar, "type", std::string("open_output")); Put(ar, "id", id); }
  template <class A> void load(A& ar) { Get(ar, "id", id); }
  Result<void> Validate() const { return Ok(); }
};

struct Ack {
  std::uint64_t id = 0;
  std::optional<std::string> error;
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("ack")); Put(ar, "id", id); Put(ar, "error", error);
  }
  template <class A> void load(A& ar) { Get(ar, "id", id); Get(ar, "error", error); }
  Result<void> Validate() const { return Ok(); }
};

// executor -> broker, unsolicited: a started job ended and its output was
// delivered (or kept, with output_error). exit_code: >= 0 exit status,
// negative signal number, none when unknown (ended while we were away).
struct JobExited {
  std::uint64_t id = 0;
  std::optional<std::int64_t> exit_code;
  bool oom = false;
  double end_time = 0;
  std::optional<std::string> output_error;
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("exited")); Put(ar, "id", id);
    Put(ar, "exit_code", exit_code); Put(ar, "oom", oom);
    Put(ar, "end_time", end_time); Put(ar, "output_error", output_error);
  }
  template <class A> void load(A& ar) {
    Get(ar, "id", id); Get(ar, "exit_code", exit_code); Get(ar, "oom", oom);
    Get(ar, "end_time", end_time); Get(ar, "output_error", output_error);
  }
  Result<void> Validate() const { return Ok(); }
};

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_EXECUTOR_MESSAGES_H_

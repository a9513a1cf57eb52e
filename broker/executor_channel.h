// ExecutorChannel: the broker's side of the SOCK_SEQPACKET link to the
// executor (protocol/executor_messages.h).
//
// At start-up (Hello, ListJobs) calls wait for their reply, bounded. While
// serving, every call is asynchronous: it returns at once and its `done`
// runs later, from Pump() when the reply (matched by req id) arrives, or
// from Expire() with kUnavailable once its deadline passed. `done` never
// runs inside the call that made it. JobExited events are queued for
// TakeEvents(). A reply nobody waits for (its call timed out) is logged and
// dropped; it never reaches another caller and never stops the broker.
#ifndef HPCB_BROKER_EXECUTOR_CHANNEL_H_
#define HPCB_BROKER_EXECUTOR_CHANNEL_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "protocol/executor_messages.h"
#include "protocol/outbox.h"
#include "protocol/pending_calls.h"

namespace hpcb::broker {

class ExecutorChannel {
 public:
  template <class T>
  using Done = std::function<void(Result<T>)>;

  virtual ~ExecutorChannel() = default;
  virtual Result<protocol::HelloReply> Hello(std::int64_t gpu_count) = 0;
  virtual Result<protocol::ListJobsReply> ListJobs(std::uint64_t after, std::uint32_t limit) = 0;

  // `client_fd` (borrowed) is passed with SCM_RIGHTS. With `job.start`,
  // `started` gets the start's outcome when the executor reports it on its
  // own (RegisterReply::starting), after `done` (when the channel fails,
  // both fail, in no set order); it is dropped unrun when the start's
  // outcome came in the RegisterReply or the registration failed.
  virtual void Register(protocol::RegisterJob job, int client_fd,
                        Done<protocol::RegisterReply> done, Done<protocol::StartReply> started) = 0;
  virtual void Start(const protocol::StartJob& start, Done<protocol::StartReply> done) = 0;
  virtual void Signal(const protocol::SignalJob& signal, Done<protocol::Ack> done) = 0;
  virtual void Forget(std::uint64_t id, Done<protocol::Ack> done) = 0;
  // The read-only output buffer of a job.
  virtual void OpenOutput(std::uint64_t id, Done<UniqueFd> done) = 0;
  // A finished job's kept output delivered again; `client_fd` (-1: none)
  // carries the owner's `--to` request, as for Register.
  virtual void DeliverAgain(std::uint64_t id, int client_fd, Done<protocol::OutputReply> done) = 0;
  // What the executor holds about one job (nullopt: nothing), for after a
  // call about it timed out.
  virtual void Query(std::uint64_t id, Done<std::optional<protocol::JobSummary>> done) = 0;

  // Reads one message (call when poll says readable). An error means the
  // executor is gone.
  virtual Result<void> Pump() = 0;
  // Requests are never sent with a blocking call (protocol/outbox.h): what
  // the socket does not take at once waits, in order, until SendQueued() (call
  // when poll says writable; an error means the executor is gone).
  virtual Result<void> SendQueued() { return Ok(); }
  virtual bool wants_write() const { return false; }
  // So much waits to be sent that new submissions are refused ("busy").
  virtual bool backed_up() const { return false; }
  // Completes the calls whose deadline passed.
  virtual void Expire() = 0;
  virtual std::optional<std::chrono::steady_clock::time_point> NextDeadline() const = 0;
  virtual std::vector<protocol::JobExited> TakeEvents() = 0;
  // For poll(); -1 when there is nothing to poll.
  virtual int fd() const = 0;
};

class SocketExecutorChannel : public ExecutorChannel {
 public:
  // Calls the executor must answer within this (it never waits on users,
  // so only a wedged executor misses it).
  static constexpr std::chrono::milliseconds kCallTimeout{30000};
  // Start-up calls: the executor may be reading 200k specs.
  static constexpr std::chrono::milliseconds kStartupTimeout{120000};

  explicit SocketExecutorChannel(UniqueFd fd) : fd_(std::move(fd)) {}

  Result<protocol::HelloReply> Hello(std::int64_t gpu_count) override;
  Result<protocol::ListJobsReply> ListJobs(std::uint64_t after, std::uint32_t limit) override;
  void Register(protocol::RegisterJob job, int client_fd, Done<protocol::RegisterReply> done,
                Done<protocol::StartReply> started) override;
  void Start(const protocol::StartJob& start, Done<protocol::StartReply> done) override;
  void Signal(const protocol::SignalJob& signal, Done<protocol::Ack> done) override;
  void Forget(std::uint64_t id, Done<protocol::Ack> done) override;
  void OpenOutput(std::uint64_t id, Done<UniqueFd> done) override;
  void DeliverAgain(std::uint64_t id, int client_fd, Done<protocol::OutputReply> done) override;
  void Query(std::uint64_t id, Done<std::optional<protocol::JobSummary>> done) override;
  Result<void> Pump() override;
  Result<void> SendQueued() override;
  bool wants_write() const override { return outbox_.wants_write(); }
  bool backed_up() const override { return outbox_.over_high_water(); }
  void Expire() override { calls_.ExpireOverdue(); }
  std::optional<std::chrono::steady_clock::time_point> NextDeadline() const override {
    return calls_.NextDeadline();
  }
  std::vector<protocol::JobExited> TakeEvents() override;
  int fd() const override { return fd_.get(); }

 private:
  // Sends `request` with a fresh req; `done` gets the reply packet, or the
  // executor's Ack error when it refused the request outright.
  template <class Request>
  void Call(Request request, const std::vector<int>& fds, const std::string& what,
            std::chrono::milliseconds timeout, protocol::PendingCalls::Done done);
  // Blocking, for start-up: Call, then Pump until it completed.
  template <class Reply, class Request>
  Result<Reply> CallAndWait(Request request, const std::string& what);
  void OnEvent(const protocol::Packet& packet);

  UniqueFd fd_;
  protocol::Outbox outbox_{fd_.get()};
  protocol::PendingCalls calls_;
  std::deque<protocol::JobExited> events_;
};

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_EXECUTOR_CHANNEL_H_

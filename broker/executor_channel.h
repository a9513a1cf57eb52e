// ExecutorChannel: the broker's side of the SOCK_SEQPACKET link to the
// executor. Each call sends one request and waits for its reply; JobExited
// events that arrive meanwhile are queued for TakeEvents().
#ifndef HPCB_BROKER_EXECUTOR_CHANNEL_H_
#define HPCB_BROKER_EXECUTOR_CHANNEL_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/base/unique_fd.h"
#include "protocol/executor_messages.h"

namespace hpcb::broker {

class ExecutorChannel {
 public:
  virtual ~ExecutorChannel() = default;
  virtual Result<protocol::HelloReply> Hello() = 0;
  // `client_fd` (borrowed) is passed with SCM_RIGHTS.
  virtual Result<protocol::RegisterReply> Register(const protocol::RegisterJob& job,
                                                   int client_fd) = 0;
  virtual Result<protocol::StartReply> Start(const protocol::StartJob& start) = 0;
  virtual Result<protocol::Ack> Signal(const protocol::SignalJob& signal) = 0;
  virtual Result<protocol::Ack> Forget(std::uint64_t id) = 0;
  // The read-only output buffer of a started job.
  virtual Result<UniqueFd> OpenOutput(std::uint64_t id) = 0;
  // Reads what is ready on the socket (call when poll says readable).
  virtual Result<void> Pump() = 0;
  virtual std::vector<protocol::JobExited> TakeEvents() = 0;
  // For poll(); -1 when there is nothing to poll.
  virtual int fd() const = 0;
};

class SocketExecutorChannel : public ExecutorChannel {
 public:
  explicit SocketExecutorChannel(UniqueFd fd) : fd_(std::move(fd)) {}

  Result<protocol::HelloReply> Hello() override;
  Result<protocol::RegisterReply> Register(const protocol::RegisterJob& job,
                                           int client_fd) override;
  Result<protocol::StartReply> Start(const protocol::StartJob& start) override;
  Result<protocol::Ack> Signal(const protocol::SignalJob& signal) override;
  Result<protocol::Ack> Forget(std::uint64_t id) override;
  Result<UniqueFd> OpenOutput(std::uint64_t id) override;
  Result<void> Pump() override;
  std::vector<protocol::JobExited> TakeEvents() override;
  int fd() const override { return fd_.get(); }

 private:
  struct Reply {
    std::string text;
    std::vector<UniqueFd> fds;
  };
  // Sends `payload` and returns the next message of type `reply_type`,
  // queueing JobExited events read before it.
  Result<Reply> Call(const std::string& payload, const char* reply_type,
                     const std::vector<int>& fds = {});
  // Handles one received message if it is an event; false otherwise.
  Result<bool> TakeIfEvent(const std::string& text);

  UniqueFd fd_;
  std::deque<protocol::JobExited> events_;
};

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_EXECUTOR_CHANNEL_H_

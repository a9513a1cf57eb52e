// BrokerServer: the broker's single-threaded poll loop. Accepts clients on
// the listening socket, peeks at one request frame per connection
// (protocol/queued_frame.h: a submission stays queued for the executor to
// read; a malformed or oversized frame closes the connection), hands it to BrokerCore,
// writes the reply, and streams attach output. Also reads executor events
// and ticks the core every second.
#ifndef HPCB_BROKER_BROKER_SERVER_H_
#define HPCB_BROKER_BROKER_SERVER_H_

#include <csignal>
#include <cstdint>
#include <map>
#include <optional>

#include "broker/broker_core.h"
#include "protocol/base/unique_fd.h"
#include "protocol/framing.h"

namespace hpcb::broker {

class BrokerServer {
 public:
  BrokerServer(BrokerCore& core, ExecutorChannel& executor, const Clock& clock,
               UniqueFd listener)
      : core_(core), executor_(executor), clock_(clock), listener_(std::move(listener)) {}

  // Runs until `*stop` becomes non-zero or the executor goes away.
  Result<void> Run(const volatile std::sig_atomic_t* stop);

 private:
  struct Connection {
    UniqueFd fd;
    uid_t uid = 0;
    double retry_at = 0;     // half a request queued: not polled before this
    double accepted_at = 0;  // steady clock; the request must be whole soon after
    std::optional<std::uint64_t> attach;  // streaming this job's output
    UniqueFd output;                      // its buffer, once started
    bool answered = false;
  };

  void Accept();
  // Over the connection caps: tells the client why (best effort) and logs,
  // at most every few seconds, how many were refused.
  void RefuseConnection(int fd, uid_t uid, std::size_t from_uid);
  // false: close the connection.
  bool OnReadable(Connection& connection);
  // false: the stream ended (or the client went away).
  bool PumpAttach(Connection& connection);

  BrokerCore& core_;
  ExecutorChannel& executor_;
  const Clock& clock_;
  UniqueFd listener_;
  std::map<int, Connection> connections_;
  std::size_t refused_connections_ = 0;
  double last_refusal_log_ = -1e9;
};

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_BROKER_SERVER_H_

// BrokerServer: the broker's single-threaded poll loop. It accepts
// clients, peeks at one request frame per connection (protocol/
// queued_frame.h: a submission stays queued for the executor to read),
// hands it to BrokerCore, and writes the answer when the core gives it.
// It also pumps the executor channel, applies its events and ticks the
// core, and flushes the core's journal once per turn (group commit).
//
// No client can hold it up. Every client socket is non-blocking; answers
// and attach output go into a per-connection buffer written as the client
// reads, and attach reads a job's output only while that buffer is below a
// high-water mark. Deadlines close a connection that sends no whole request
// in time, stops reading, or takes too long over one answer. Connection
// slots are shared fairly: when all are taken, the uid holding the most
// gives up its oldest idle one to a uid holding fewer.
#ifndef HPCB_BROKER_BROKER_SERVER_H_
#define HPCB_BROKER_BROKER_SERVER_H_

#include <sys/types.h>

#include <csignal>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "broker/broker_core.h"
#include "common/base/unique_fd.h"
#include "protocol/framing.h"

namespace hpcb::broker {

struct ServerLimits {
  std::size_t max_connections = 4096;
  std::size_t max_connections_per_uid = 64;
  // A client must have sent one whole request within this after connecting.
  double request_deadline_s = 5;
  // A connection with output waiting that the client has not read any of
  // for this long is closed.
  double write_stall_s = 30;
  // An answer other than an attach stream must be read within this.
  double answer_deadline_s = 120;
  // Attach reads a job's output only while less than this is buffered.
  std::size_t attach_high_water = std::size_t{256} * 1024;
};

class BrokerServer {
 public:
  BrokerServer(BrokerCore& core, ExecutorChannel& executor, const Clock& clock, UniqueFd listener,
               ServerLimits limits = {})
      : core_(core),
        executor_(executor),
        clock_(clock),
        listener_(std::move(listener)),
        limits_(limits) {}

  // Runs until `*stop` becomes non-zero or the executor goes away.
  Result<void> Run(const volatile std::sig_atomic_t* stop);

 private:
  enum class Stage {
    kReading,    // waiting for one whole request frame
    kWaiting,    // the core has the request; its answer is not in yet
    kAnswering,  // writing the answer, then closing
    kStreaming,  // attach: answer written, output follows
  };

  struct Connection {
    UniqueFd fd;
    uid_t uid = 0;
    Stage stage = Stage::kReading;
    double accepted_at = 0;    // steady clock
    double answer_since = 0;   // when the answer was queued
    double last_progress = 0;  // last time the client took bytes
    double retry_at = 0;       // half a request queued: not polled before this
    std::size_t request_bytes = 0;
    std::string out;  // frames not yet written
    std::size_t out_offset = 0;
    std::optional<std::uint64_t> attach;
    std::optional<ListCursor> list;  // a list's later pages, each built once the last is out
    UniqueFd output;                 // the attached job's buffer, once opened
    bool output_requested = false;
    bool output_answered = false;
    bool output_ended = false;  // the end-of-stream frame is queued
    bool closing = false;       // erased at the end of this turn
  };

  void AcceptAll();
  // Over the caps: frees a slot from the uid holding the most, or tells the
  // newcomer why not (best effort) and logs, at most every few seconds.
  bool MakeRoomFor(uid_t uid, std::size_t from_uid);
  void Refuse(int fd, const std::string& why);
  // `fresh`: just accepted, its request may not have arrived yet; if it
  // has not, the poll waits for it (no stall as for half a frame).
  void OnReadable(std::uint64_t key, Connection& connection, bool fresh = false);
  void OnAnswer(std::uint64_t key, const Response& response);
  // Writes what the client will take now; false when it went away.
  bool WriteSome(Connection& connection);
  void PumpAttach(std::uint64_t key, Connection& connection);
  void Queue(Connection& connection, std::string_view frame);
  std::size_t Pending(const Connection& connection) const {
    return connection.out.size() - connection.out_offset;
  }
  void CloseOverdue(double now);
  void Sweep();

  BrokerCore& core_;
  ExecutorChannel& executor_;
  const Clock& clock_;
  UniqueFd listener_;
  ServerLimits limits_;
  std::map<std::uint64_t, Connection> connections_;  // by key, never reused
  std::uint64_t next_key_ = 1;
  std::size_t refused_connections_ = 0;
  double last_refusal_log_ = -1e9;
};

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_BROKER_SERVER_H_

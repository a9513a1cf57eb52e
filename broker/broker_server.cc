#include "broker/broker_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include "common/base/log.h"
#include "protocol/client_framing.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "protocol/queued_frame.h"

namespace hpcb::broker {
namespace {

constexpr int kPollMs = 250;
constexpr int kStalledPollMs = 20;
constexpr double kStalledRetryS = 0.02;
constexpr std::size_t kChunk = std::size_t{64} * 1024;
constexpr int kMaxAcceptsPerTurn = 64;
constexpr int kMaxExecutorMessagesPerTurn = 256;
constexpr double kRefusalLogEveryS = 10.0;

// Deadlines run on the real clock: the policy clock may be a test's.
double SteadyNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void BrokerServer::Refuse(int fd, const std::string& why) {
  // A fresh socket's send buffer is empty, so this small frame never waits.
  const std::string frame = protocol::EncodeFrame(
      protocol::Encode(protocol::ErrorReply::From(Error(ErrorCode::kResourceExhausted, why))));
  (void)::send(fd, frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ++refused_connections_;
  const double now = SteadyNow();
  if (now - last_refusal_log_ >= kRefusalLogEveryS) {
    LogWarning("refused " + std::to_string(refused_connections_) + " connection(s): " + why);
    refused_connections_ = 0;
    last_refusal_log_ = now;
  }
}

bool BrokerServer::MakeRoomFor(uid_t uid, std::size_t from_uid) {
  if (from_uid >= limits_.max_connections_per_uid) return false;
  if (connections_.size() < limits_.max_connections) return true;
  // Full: the uid holding the most slots gives one up, if it holds more
  // than the newcomer would, so no one user (or idle crowd) locks others
  // out. Its oldest connection still reading a request goes first.
  std::map<uid_t, std::size_t> held;
  for (const auto& [key, connection] : connections_) {
    if (!connection.closing) ++held[connection.uid];
  }
  auto top = std::max_element(held.begin(), held.end(),
                              [](const auto& a, const auto& b) { return a.second < b.second; });
  if (top == held.end() || top->first == uid || top->second <= from_uid + 1) return false;
  for (auto& [key, connection] : connections_) {
    if (connection.uid == top->first && !connection.closing &&
        connection.stage == Stage::kReading) {
      connection.closing = true;
      return true;
    }
  }
  for (auto& [key, connection] : connections_) {
    // Never one waiting on the core: its request may be taking effect.
    if (connection.uid == top->first && !connection.closing &&
        connection.stage != Stage::kWaiting) {
      connection.closing = true;
      return true;
    }
  }
  return false;
}

void BrokerServer::AcceptAll() {
  for (int i = 0; i < kMaxAcceptsPerTurn; ++i) {
    const int raw = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (raw < 0) {
      if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED) {
        LogWarning("accept failed: " + std::to_string(errno));
      }
      return;
    }
    UniqueFd fd(raw);
    Result<struct ucred> cred = protocol::PeerCredentials(fd.get());
    if (!cred) continue;
    const auto from_uid = static_cast<std::size_t>(std::count_if(
        connections_.begin(), connections_.end(),
        [&](const auto& entry) { return entry.second.uid == cred->uid && !entry.second.closing; }));
    if (!MakeRoomFor(cred->uid, from_uid)) {
      Refuse(fd.get(), from_uid >= limits_.max_connections_per_uid
                           ? "too many open connections from uid " + std::to_string(cred->uid) +
                                 " (" + std::to_string(limits_.max_connections_per_uid) +
                                 "); try again when some have finished"
                           : "the daemon has too many open connections (" +
                                 std::to_string(limits_.max_connections) + "); try again shortly");
      continue;
    }
    Connection connection;
    connection.uid = cred->uid;
    connection.accepted_at = SteadyNow();
    connection.last_progress = connection.accepted_at;
    connection.fd = std::move(fd);
    const std::uint64_t key = next_key_++;
    // A client sends its request right after connecting, so it is usually
    // queued by now: served in this turn, not after one more poll.
    OnReadable(key, connections_.emplace(key, std::move(connection)).first->second,
               /*fresh=*/true);
  }
}

void BrokerServer::OnReadable(std::uint64_t key, Connection& connection, bool fresh) {
  if (connection.stage != Stage::kReading) {
    // Only EOF or stray bytes can follow a request; an attach ends when
    // the client goes.
    char sink[512];
    const ssize_t n = ::recv(connection.fd.get(), sink, sizeof sink, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) connection.closing = true;
    return;
  }
  // Peeked, not read: a submission's frame must still be queued when the
  // executor takes it from this socket (queued_frame.h).
  Result<std::optional<std::string>> frame = protocol::PeekQueuedFrame(connection.fd.get());
  if (!frame) {
    if (frame.error().code() != ErrorCode::kUnavailable) {
      LogWarning("closing a client connection: " + frame.error().message());
    }
    connection.closing = true;
    return;
  }
  if (!*frame) {
    if (fresh) return;
    // Half a frame: poll would report the socket readable again at once,
    // so leave it out of the poll set for a moment instead of spinning.
    connection.retry_at = SteadyNow() + kStalledRetryS;
    return;
  }
  connection.stage = Stage::kWaiting;
  connection.request_bytes = 4 + (*frame)->size();
  core_.Handle(Peer{connection.uid, connection.fd.get()}, **frame,
               [this, key](const Response& response) { OnAnswer(key, response); });
}

void BrokerServer::OnAnswer(std::uint64_t key, const Response& response) {
  auto it = connections_.find(key);
  if (it == connections_.end() || it->second.closing) return;
  Connection& connection = it->second;
  // Whatever the executor did not take (any request but an accepted
  // submission) is still queued: drop it, or closing would reset the client.
  protocol::DiscardQueued(connection.fd.get(), connection.request_bytes);
  if (response.frame.empty()) {
    connection.closing = true;
    return;
  }
  Queue(connection, response.frame);
  connection.list = response.list;
  connection.answer_since = SteadyNow();
  connection.last_progress = connection.answer_since;
  if (response.attach) {
    connection.stage = Stage::kStreaming;
    connection.attach = response.attach;
    PumpAttach(key, connection);
  } else {
    connection.stage = Stage::kAnswering;
  }
  if (!WriteSome(connection)) connection.closing = true;
}

void BrokerServer::Queue(Connection& connection, std::string_view frame) {
  if (connection.out_offset > 0 && connection.out_offset == connection.out.size()) {
    connection.out.clear();
    connection.out_offset = 0;
  }
  connection.out += protocol::EncodeFrame(frame);
}

bool BrokerServer::WriteSome(Connection& connection) {
  for (;;) {
    while (Pending(connection) > 0) {
      const ssize_t n = ::send(connection.fd.get(), connection.out.data() + connection.out_offset,
                               Pending(connection), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;
      }
      connection.out_offset += static_cast<std::size_t>(n);
      connection.last_progress = SteadyNow();
    }
    connection.out.clear();
    connection.out_offset = 0;
    if (!connection.list) break;
    // The next page only now that the last one is out: a client that does
    // not read holds one page, however long the list.
    bool more = false;
    Queue(connection, core_.ListPage(*connection.list, &more));
    if (!more) connection.list.reset();
  }
  // An answer fully written ends the connection; a stream ends after its
  // end-of-stream frame.
  if (connection.stage == Stage::kAnswering || connection.output_ended) connection.closing = true;
  return true;
}

void BrokerServer::PumpAttach(std::uint64_t key, Connection& connection) {
  if (connection.output_ended) return;
  const std::uint64_t id = *connection.attach;
  const JobRecord* job = core_.Find(id);
  const bool done = job == nullptr || job->done();
  // Opened at once, even for a queued job: the buffer exists from its
  // registration, and an fd opened now still reads it after a delivery has
  // removed it (a short job can start, end and be delivered in between).
  // Trap: an array's element has no buffer until its start makes it; it is
  // opened on the first turn after, so an element that starts, ends and is
  // delivered within one turn streams nothing (its output is in its file).
  if (!connection.output.valid() && !connection.output_requested && job != nullptr &&
      job->on_executor) {
    connection.output_requested = true;
    core_.OpenOutput(id, [this, key](Result<UniqueFd> fd) {
      auto it = connections_.find(key);
      if (it == connections_.end()) return;
      it->second.output_answered = true;
      if (fd) it->second.output = std::move(*fd);
    });
  }
  // An output request in flight is waited for: the job's last lines are in
  // the buffer it opens.
  if (connection.output_requested && !connection.output_answered) return;
  if (connection.output.valid()) {
    char buffer[kChunk];
    while (Pending(connection) < limits_.attach_high_water) {
      const ssize_t n = ::read(connection.output.get(), buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      Queue(connection, std::string_view(buffer, static_cast<std::size_t>(n)));
    }
    // More to read: the end waits until it is all out.
    if (done && Pending(connection) >= limits_.attach_high_water) return;
  }
  if (!done) return;
  Queue(connection, "");
  connection.output_ended = true;
}

void BrokerServer::CloseOverdue(double now) {
  for (auto& [key, connection] : connections_) {
    if (connection.closing) continue;
    switch (connection.stage) {
      case Stage::kReading:
        if (now - connection.accepted_at > limits_.request_deadline_s) {
          Log(LogLevel::kDebug, "dropping a client that sent no whole request in time");
          connection.closing = true;
        }
        break;
      case Stage::kWaiting:
        break;  // the core answers every request; the executor's calls time out
      case Stage::kAnswering:
        if (now - connection.answer_since > limits_.answer_deadline_s ||
            now - connection.last_progress > limits_.write_stall_s) {
          LogWarning("dropping a client (uid " + std::to_string(connection.uid) +
                     ") that does not read its answer");
          connection.closing = true;
        }
        break;
      case Stage::kStreaming:
        if (Pending(connection) > 0 && now - connection.last_progress > limits_.write_stall_s) {
          LogWarning("dropping an attach client (uid " + std::to_string(connection.uid) +
                     ") that does not read its stream");
          connection.closing = true;
        }
        break;
    }
  }
}

void BrokerServer::Sweep() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (it->second.closing) {
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

Result<void> BrokerServer::Run(const volatile std::sig_atomic_t* stop) {
  // AcceptAll takes every pending connection until accept would block.
  const int flags = ::fcntl(listener_.get(), F_GETFL);
  if (flags < 0 || ::fcntl(listener_.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return Error::FromErrno(errno, "make the client socket non-blocking");
  }
  double last_tick = clock_.Now();
  while (*stop == 0) {
    // The executor is always read, whatever waits to be sent to it: that
    // is what keeps both channels moving (protocol/outbox.h).
    std::vector<struct pollfd> fds{
        {listener_.get(), POLLIN, 0},
        {executor_.fd(), static_cast<short>(POLLIN | (executor_.wants_write() ? POLLOUT : 0)), 0}};
    std::vector<std::uint64_t> keys;
    const double before = SteadyNow();
    int wait_ms = kPollMs;
    for (auto& [key, connection] : connections_) {
      short events = 0;
      switch (connection.stage) {
        case Stage::kReading:
          if (connection.retry_at > before) {
            wait_ms = std::min(wait_ms, kStalledPollMs);
          } else {
            events = POLLIN;
          }
          break;
        case Stage::kWaiting:
          // Not polled: its request is still queued on the socket for the
          // executor, and a hung-up client would wake every turn.
          continue;
        case Stage::kAnswering:
        case Stage::kStreaming:
          events = POLLIN;
          if (Pending(connection) > 0) events |= POLLOUT;
          // A stream with room and output to read is pumped every turn.
          if (connection.stage == Stage::kStreaming && Pending(connection) == 0) {
            wait_ms = std::min(wait_ms, kPollMs);
          }
          break;
      }
      fds.push_back({connection.fd.get(), events, 0});
      keys.push_back(key);
    }
    if (std::optional<std::chrono::steady_clock::time_point> next = executor_.NextDeadline()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *next - std::chrono::steady_clock::now());
      wait_ms = std::clamp<int>(static_cast<int>(left.count()) + 1, 0, wait_ms);
    }
    const int ready = ::poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno != EINTR) return Error::FromErrno(errno, "poll");
    if (ready > 0 && (fds[1].revents & (POLLOUT | POLLHUP | POLLERR)) && executor_.wants_write()) {
      if (Result<void> flushed = executor_.SendQueued(); !flushed) {
        return Error(ErrorCode::kUnavailable, "lost the executor: " + flushed.error().message());
      }
    }
    if (ready > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      // Drain what the executor sent, a bounded number per turn.
      for (int i = 0; i < kMaxExecutorMessagesPerTurn; ++i) {
        Result<void> pumped = executor_.Pump();
        if (!pumped) {
          return Error(ErrorCode::kUnavailable, "lost the executor: " + pumped.error().message());
        }
        struct pollfd more {
          executor_.fd(), POLLIN, 0
        };
        if (::poll(&more, 1, 0) <= 0) break;
      }
    }
    if (ready > 0) {
      for (std::size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto it = connections_.find(keys[i - 2]);
        if (it == connections_.end() || it->second.closing) continue;
        Connection& connection = it->second;
        if (fds[i].revents & (POLLERR | POLLNVAL)) {
          connection.closing = true;
          continue;
        }
        if (fds[i].revents & POLLOUT) {
          if (!WriteSome(connection)) connection.closing = true;
        }
        if (fds[i].revents & (POLLIN | POLLHUP)) OnReadable(keys[i - 2], connection);
      }
      if (fds[0].revents & POLLIN) AcceptAll();
    }
    executor_.Expire();
    const double now = clock_.Now();
    // Exit events are applied at once, and what they freed is placed;
    // timers and the policy run every second.
    std::vector<protocol::JobExited> events = executor_.TakeEvents();
    for (const protocol::JobExited& event : events)
      core_.OnExited(event);
    if (now - last_tick >= 1.0 || now < last_tick) {
      core_.Tick();
      last_tick = now;
    } else if (!events.empty()) {
      core_.AfterExits();
    }
    // One journal write for every change of this turn, then the answers
    // that waited for it.
    core_.Flush();
    for (auto& [key, connection] : connections_) {
      if (connection.closing || connection.stage != Stage::kStreaming) continue;
      PumpAttach(key, connection);
      if (!WriteSome(connection)) connection.closing = true;
    }
    CloseOverdue(SteadyNow());
    Sweep();
    if (core_.executor_lost()) {
      return Error(ErrorCode::kUnavailable, "the executor stopped answering");
    }
  }
  return Ok();
}

}  // namespace hpcb::broker

#include "broker/broker_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include "protocol/base/log.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "protocol/queued_frame.h"

namespace hpcb::broker {
namespace {

constexpr int kPollMs = 250;
constexpr int kStalledPollMs = 20;
constexpr std::size_t kChunk = 64 * 1024;
constexpr std::size_t kMaxChunksPerPump = 16;
constexpr double kStalledRetryS = 0.02;
// A client that has not sent one whole request by then is dropped: half a
// frame followed by silence (or by close, which peeking cannot see behind
// the queued bytes) would otherwise hold a descriptor forever.
constexpr double kRequestDeadlineS = 10.0;
constexpr int kSendTimeoutS = 5;
// Each connection holds a descriptor until it is answered (or for as long
// as an attach streams): without a cap one user could take every
// descriptor the broker has. The per-user cap leaves room for the others.
constexpr std::size_t kMaxConnections = 512;
constexpr std::size_t kMaxConnectionsPerUid = 64;
constexpr double kRefusalLogEveryS = 10.0;

// Stall back-off runs on the real clock: the policy clock may be a test's.
double SteadyNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void BrokerServer::Accept() {
  int raw = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
  if (raw < 0) {
    if (errno != EINTR && errno != EAGAIN) LogWarning("accept failed: " + std::to_string(errno));
    return;
  }
  UniqueFd fd(raw);
  Result<struct ucred> cred = protocol::PeerCredentials(fd.get());
  if (!cred) return;
  const auto from_uid = static_cast<std::size_t>(
      std::count_if(connections_.begin(), connections_.end(),
                    [&](const auto& entry) { return entry.second.uid == cred->uid; }));
  if (connections_.size() >= kMaxConnections || from_uid >= kMaxConnectionsPerUid) {
    RefuseConnection(fd.get(), cred->uid, from_uid);
    return;
  }
  Connection connection;
  connection.uid = cred->uid;
  connection.accepted_at = SteadyNow();
  // Replies are written blocking; a client that stops reading a long list
  // must not freeze the broker, so a stalled write fails after this.
  struct timeval send_timeout {kSendTimeoutS, 0};
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
  connection.fd = std::move(fd);
  connections_.emplace(raw, std::move(connection));
}

void BrokerServer::RefuseConnection(int fd, uid_t uid, std::size_t from_uid) {
  const std::string why =
      from_uid >= kMaxConnectionsPerUid
          ? "too many open connections from uid " + std::to_string(uid) + " (" +
                std::to_string(kMaxConnectionsPerUid) + "); try again when some have finished"
          : "the daemon has too many open connections (" + std::to_string(kMaxConnections) +
                "); try again shortly";
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

bool BrokerServer::OnReadable(Connection& connection) {
  if (connection.answered) {
    // Only EOF or stray bytes can follow; an attach ends when the client goes.
    char sink[512];
    ssize_t n = ::read(connection.fd.get(), sink, sizeof sink);
    return n > 0 || (n < 0 && errno == EINTR);
  }
  // Peeked, not read: a submission's frame must still be queued when the
  // executor takes it from this socket (queued_frame.h).
  Result<std::optional<std::string>> frame = protocol::PeekQueuedFrame(connection.fd.get());
  if (!frame) {
    if (frame.error().code() != ErrorCode::kUnavailable) {
      LogWarning("closing a client connection: " + frame.error().message());
    }
    return false;
  }
  if (!*frame) {
    // Half a frame: poll would report the socket readable again at once,
    // so leave it out of the poll set for a moment instead of spinning.
    connection.retry_at = SteadyNow() + kStalledRetryS;
    return true;
  }
  connection.answered = true;
  std::optional<Response> response =
      core_.Handle(Peer{connection.uid, connection.fd.get()}, **frame);
  // Whatever the executor did not take (any request but an accepted
  // submission) is still queued: drop it, or closing would reset the client.
  protocol::DiscardQueued(connection.fd.get(), 4 + (*frame)->size());
  if (!response) return false;
  if (!protocol::WriteFrame(connection.fd.get(), response->frame)) return false;
  if (!response->attach) return false;
  connection.attach = response->attach;
  return PumpAttach(connection);
}

bool BrokerServer::PumpAttach(Connection& connection) {
  const std::uint64_t id = *connection.attach;
  const JobRecord* job = core_.Find(id);
  const bool done = job == nullptr || job->done();
  if (!connection.output.valid() && job != nullptr && job->start_time) {
    Result<UniqueFd> fd = core_.OpenOutput(id);
    if (fd) connection.output = std::move(fd).value();
  }
  if (connection.output.valid()) {
    char buffer[kChunk];
    for (std::size_t i = 0; done || i < kMaxChunksPerPump; ++i) {
      ssize_t n = ::read(connection.output.get(), buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (!protocol::WriteFrame(connection.fd.get(),
                                std::string_view(buffer, static_cast<std::size_t>(n)))) {
        return false;
      }
    }
  }
  if (!done) return true;
  (void)protocol::WriteFrame(connection.fd.get(), "");
  return false;
}

Result<void> BrokerServer::Run(const volatile std::sig_atomic_t* stop) {
  double last_tick = clock_.Now();
  while (*stop == 0) {
    std::vector<struct pollfd> fds;
    fds.push_back({listener_.get(), POLLIN, 0});
    fds.push_back({executor_.fd(), POLLIN, 0});
    const double before = SteadyNow();
    bool stalled = false;
    for (auto& [raw, connection] : connections_) {
      if (connection.retry_at > before) {
        stalled = true;
        continue;
      }
      fds.push_back({raw, POLLIN, 0});
    }
    int ready = ::poll(fds.data(), fds.size(), stalled ? kStalledPollMs : kPollMs);
    if (ready < 0 && errno != EINTR) return Error::FromErrno(errno, "poll");
    if (ready > 0) {
      if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        Result<void> pumped = executor_.Pump();
        if (!pumped) {
          return Error(ErrorCode::kUnavailable,
                       "lost the executor: " + pumped.error().message());
        }
      }
      for (std::size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto it = connections_.find(fds[i].fd);
        if (it == connections_.end()) continue;
        if (!OnReadable(it->second)) connections_.erase(it);
      }
      if (fds[0].revents & POLLIN) Accept();
    }
    const double steady = SteadyNow();
    for (auto it = connections_.begin(); it != connections_.end();) {
      const bool too_slow = !it->second.answered && steady - it->second.accepted_at > kRequestDeadlineS;
      if (too_slow) LogWarning("dropping a client that sent no whole request in 10 s");
      if (too_slow || (it->second.attach && !PumpAttach(it->second))) {
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
    const double now = clock_.Now();
    // Exit events are applied at once; timers and the policy every second.
    std::vector<protocol::JobExited> events = executor_.TakeEvents();
    for (const protocol::JobExited& event : events) core_.OnExited(event);
    if (!events.empty() || now - last_tick >= 1.0 || now < last_tick) {
      core_.Tick();
      last_tick = now;
    }
  }
  return Ok();
}

}  // namespace hpcb::broker

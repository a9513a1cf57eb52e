// forged_broker: stands in for hpc-batch-broker (same name, same fds: 3 is
// the executor channel, 4 the client listening socket) so a test can send
// the root executor whatever a compromised broker could.
//
// At start (still root, as the launcher starts it) it connects to the
// test's control socket ($HPCB_FORGED_CONTROL) and opens the reply log
// ($HPCB_FORGED_REPLIES), then drops to the broker's service user
// (--broker-user, as the real broker does), so a socket it makes itself
// has that uid as its peer. Then it obeys one command per control line and
// answers one line (the executor's reply, newlines flattened, or
// "ERROR <why>"):
//   send JSON       send JSON as one message; answer the reply
//   oversized N     send one N-byte message in 64 KiB '+' packets (no JSON)
//   accept JSON     accept a client on fd 4, wait (bounded) until a whole
//                   submit frame is queued on it (peeked, never read), send
//                   JSON with that connection attached
//   pair JSON       make a socketpair, queue a valid submit frame on it,
//                   send JSON with our own end attached
//   echo PATH JSON  connect to the unix socket PATH (some user's own
//                   service that echoes what it reads), write a submit
//                   frame into it, wait (bounded) until the echo of it is
//                   queued on our end, send JSON with our end attached
//   event           answer the next unsolicited "exited" message that ends a
//                   job (waits; a release ahead of the end is skipped)
// Every message it receives from the executor is also appended to the
// reply log, one per line. Every wait is bounded (10-20 s).
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "broker/daemon_config.h"
#include "common/base/unique_fd.h"
#include "protocol/client_framing.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "protocol/envelope.h"
#include "protocol/framing.h"
#include "protocol/queued_frame.h"

namespace {

using hpcb::UniqueFd;
namespace protocol = hpcb::protocol;
namespace broker = hpcb::broker;

constexpr int kExecutorFd = 3;
constexpr int kListenFd = 4;

int g_replies = -1;
std::deque<std::string> g_events;
std::vector<UniqueFd> g_kept;  // client connections stay open: never reset them

void Log(const std::string& line) {
  std::fprintf(stderr, "forged_broker: %s\n", line.c_str());
}

std::string Flat(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

void Record(const std::string& text) {
  if (g_replies < 0) return;
  std::string line = Flat(text) + "\n";
  (void)!::write(g_replies, line.data(), line.size());
}

bool Readable(int fd, int timeout_ms) {
  struct pollfd pfd {
    fd, POLLIN, 0
  };
  return ::poll(&pfd, 1, timeout_ms) > 0;
}

// An "exited" event that only gives the job's cpus back ahead of its end
// (JobExited::delivering): not queued, the end follows.
bool OnlyReleases(const std::string& bytes) {
  return bytes.find(R"("delivering":true)") != std::string::npos;
}

// The next reply from the executor; unsolicited "exited" events are queued.
std::string AwaitReply() {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!Readable(kExecutorFd, 200)) continue;
    auto packet = protocol::ReceiveMessage(kExecutorFd);
    if (!packet) return "ERROR receive: " + packet.error().message();
    Record(packet->bytes);
    auto envelope = protocol::PeekEnvelope(packet->bytes);
    if (envelope && envelope->type == "exited") {
      if (!OnlyReleases(packet->bytes)) g_events.push_back(packet->bytes);
      continue;
    }
    return Flat(packet->bytes);
  }
  return "ERROR no reply from the executor within 20 s";
}

std::string AwaitEvent() {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (g_events.empty() && std::chrono::steady_clock::now() < deadline) {
    if (!Readable(kExecutorFd, 200)) continue;
    auto packet = protocol::ReceiveMessage(kExecutorFd);
    if (!packet) return "ERROR receive: " + packet.error().message();
    Record(packet->bytes);
    auto envelope = protocol::PeekEnvelope(packet->bytes);
    if (envelope && envelope->type == "exited" && !OnlyReleases(packet->bytes))
      g_events.push_back(packet->bytes);
  }
  if (g_events.empty()) return "ERROR no event within 20 s";
  std::string event = g_events.front();
  g_events.pop_front();
  return Flat(event);
}

std::string Send(const std::string& json, const std::vector<int>& fds = {}) {
  auto sent = protocol::SendMessage(kExecutorFd, json, fds);
  if (!sent) return "ERROR send: " + sent.error().message();
  return AwaitReply();
}

std::string SendOversized(std::size_t total) {
  constexpr std::size_t kChunk = 64 * 1024;
  std::size_t left = total;
  while (left > 0) {
    std::size_t take = left < kChunk ? left : kChunk;
    left -= take;
    std::string packet(1, left > 0 ? '+' : '.');
    packet.append(take, 'x');
    ssize_t put;
    do {
      put = ::send(kExecutorFd, packet.data(), packet.size(), MSG_NOSIGNAL);
    } while (put < 0 && errno == EINTR);
    if (put < 0) return std::string("ERROR send: ") + std::strerror(errno);
  }
  return AwaitReply();
}

// Waits (peeking only) until a whole length-prefixed frame is queued.
bool FrameQueued(int fd, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string buffer(protocol::kMaxRequestFrame + 4, '\0');
  while (std::chrono::steady_clock::now() < deadline) {
    ssize_t got = ::recv(fd, buffer.data(), buffer.size(), MSG_PEEK | MSG_DONTWAIT);
    if (got >= 4) {
      const auto* u = reinterpret_cast<const unsigned char*>(buffer.data());
      std::size_t size = u[0] | (u[1] << 8) | (u[2] << 16) | (static_cast<std::size_t>(u[3]) << 24);
      if (static_cast<std::size_t>(got) >= 4 + size) return true;
    } else if (got == 0) {
      return false;
    }
    ::usleep(20 * 1000);
  }
  return false;
}

std::string AcceptAndRegister(const std::string& json) {
  if (!Readable(kListenFd, 10000)) return "ERROR no client connected within 10 s";
  UniqueFd client(::accept4(kListenFd, nullptr, nullptr, SOCK_CLOEXEC));
  if (!client.valid()) return std::string("ERROR accept: ") + std::strerror(errno);
  if (!FrameQueued(client.get(), 5000)) Log("no whole frame queued on the client; sending anyway");
  std::string reply = Send(json, {client.get()});
  g_kept.push_back(std::move(client));
  return reply;
}

std::string PairAndRegister(const std::string& json) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return std::string("ERROR socketpair: ") + std::strerror(errno);
  }
  UniqueFd ours(fds[0]);
  UniqueFd theirs(fds[1]);
  protocol::SubmitRequest submit;
  submit.argv = {"id"};
  submit.cwd = "/";
  submit.user = "forged";
  auto written = protocol::WriteFrame(theirs.get(), protocol::Encode(submit));
  if (!written) return "ERROR write frame: " + written.error().message();
  std::string reply = Send(json, {ours.get()});
  g_kept.push_back(std::move(ours));
  g_kept.push_back(std::move(theirs));
  return reply;
}

std::string EchoAndRegister(const std::string& rest) {
  const std::string path = rest.substr(0, rest.find(' '));
  const std::string json = rest.size() > path.size() ? rest.substr(path.size() + 1) : "";
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (!fd.valid() || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return std::string("ERROR connect: ") + std::strerror(errno);
  }
  protocol::SubmitRequest submit;
  submit.argv = {"sh", "-c", "id -u > /tmp/hpcb-echo-pwned"};
  submit.cwd = "/";
  submit.user = "forged";
  auto written = protocol::WriteFrame(fd.get(), protocol::Encode(submit));
  if (!written) return "ERROR write frame: " + written.error().message();
  if (!FrameQueued(fd.get(), 5000)) return "ERROR the service echoed nothing back";
  std::string reply = Send(json, {fd.get()});
  g_kept.push_back(std::move(fd));
  return reply;
}

bool DropTo(const std::string& user) {
  struct passwd* pw = ::getpwnam(user.c_str());
  if (pw == nullptr) {
    Log("no user " + user + "; staying root");
    return false;
  }
  if (::setgroups(0, nullptr) != 0 || ::setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) != 0 ||
      ::setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) != 0) {
    Log("cannot drop to " + user + ": " + std::strerror(errno));
    return false;
  }
  return true;
}

bool ReadLine(int fd, std::string& pending, std::string& line) {
  for (;;) {
    auto nl = pending.find('\n');
    if (nl != std::string::npos) {
      line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      return true;
    }
    char buf[4096];
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    pending.append(buf, static_cast<std::size_t>(got));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == protocol::kCheckFlagsArg) {
    return broker::CheckDaemonFlags({args.begin() + 1, args.end()});
  }
  broker::ParsedFlags parsed = broker::ParseDaemonFlags(args);
  const char* control_path = std::getenv("HPCB_FORGED_CONTROL");
  const char* replies_path = std::getenv("HPCB_FORGED_REPLIES");
  if (control_path == nullptr) {
    Log("HPCB_FORGED_CONTROL is not set");
    return 2;
  }
  if (replies_path != nullptr) {
    g_replies = ::open(replies_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  UniqueFd control(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", control_path);
  if (!control.valid() ||
      ::connect(control.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    Log(std::string("cannot connect to the control socket: ") + std::strerror(errno));
    return 2;
  }
  if (::geteuid() == 0) DropTo(parsed.config.broker_user);
  Log("ready as uid " + std::to_string(::getuid()));

  std::string pending;
  std::string line;
  while (ReadLine(control.get(), pending, line)) {
    std::string cmd = line.substr(0, line.find(' '));
    std::string rest = line.size() > cmd.size() ? line.substr(cmd.size() + 1) : "";
    std::string answer;
    if (cmd == "send") {
      answer = Send(rest);
    } else if (cmd == "oversized") {
      answer = SendOversized(std::strtoull(rest.c_str(), nullptr, 10));
    } else if (cmd == "accept") {
      answer = AcceptAndRegister(rest);
    } else if (cmd == "pair") {
      answer = PairAndRegister(rest);
    } else if (cmd == "echo") {
      answer = EchoAndRegister(rest);
    } else if (cmd == "event") {
      answer = AwaitEvent();
    } else {
      answer = "ERROR unknown command '" + cmd + "'";
    }
    answer += "\n";
    if (!protocol::WriteAll(control.get(), answer)) break;
  }
  Log("control socket closed; exiting");
  return 0;
}

#include "launcher/standby_shepherd.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "launcher/child_fds.h"
#include "launcher/user_ops.h"
#include "protocol/codec.h"
#include "protocol/framing.h"
#include "protocol/launcher_messages.h"

namespace hpcb::launcher {
namespace {

[[noreturn]] void CannotTakeIt(int channel, int err) {
  ShepherdReport report;
  report.stage = kHandOverStage;
  report.err = err;
  // MSG_NOSIGNAL: a launcher gone by now is no reason to die of SIGPIPE.
  (void)::send(channel, &report, sizeof report, MSG_NOSIGNAL);
  ::_exit(1);
}

// What a standby takes from its order. The order's bytes are freed before
// the shepherd's life begins: only the decoded job stays.
struct TakenJob {
  protocol::SpawnRequest request;
  PreparedJob job;
  protocol::Packet packet;  // its descriptors; its bytes cleared
};

TakenJob TakeJob(int channel, const ShepherdOptions& options) {
  Result<protocol::Packet> packet = protocol::ReceiveMessage(channel, kMaxStandbyOrder);
  if (!packet) {
    // The launcher closed its end (it stopped, died or re-exec'd): nothing
    // to answer. Anything else is reported, so no start fails unexplained.
    if (packet.error().code() == ErrorCode::kUnavailable) ::_exit(0);
    CannotTakeIt(channel, EPROTO);
  }
  if (packet->fds.empty() || packet->fds.size() > 2) CannotTakeIt(channel, EBADF);
  Result<StandbyOrder> order = DecodeStandbyOrder(packet->bytes);
  packet->bytes = std::string();
  if (!order) CannotTakeIt(channel, EINVAL);
  Result<protocol::SpawnRequest> request =
      protocol::Decode<protocol::SpawnRequest>(order->request_text);
  if (!request) CannotTakeIt(channel, EINVAL);
  // The launcher checked the same bytes; checked again, since it costs
  // nothing and this process is about to act on them as root.
  if (!CheckIdentityAllowed(request->who, options.change_identity)) CannotTakeIt(channel, EPERM);
  Result<PreparedJob> job = PreparedJob::Build(*request, std::move(order->hide));
  if (!job) CannotTakeIt(channel, ENOMEM);
  return TakenJob{std::move(*request), std::move(*job), std::move(*packet)};
}

[[noreturn]] void AwaitJob(int channel, const ShepherdOptions& options) {
  std::vector<int> keep{channel};
  if (!KeepOnlyFds(keep)) ::_exit(1);
  channel = keep[0];
  // Named once it holds nothing of the launcher's but this socket.
  (void)::prctl(PR_SET_NAME, "hpcb-standby", 0, 0, 0);
  // Blocks until the launcher hands over a job or goes away (only the
  // launcher holds the other end).
  TakenJob taken = TakeJob(channel, options);
  SpawnFds fds;
  fds.buffer = taken.packet.fds[0].get();
  if (taken.packet.fds.size() == 2) fds.cgroup_dir = taken.packet.fds[1].get();
  RunShepherd(taken.request, taken.job, fds, channel, options);
}

// Whether `standby` has already exited (or closed its end): handing it a
// job then would fail that job for nothing.
bool HasExited(const StandbyShepherd& standby) {
  struct pollfd pfd {
    standby.channel.get(), POLLOUT, 0
  };
  if (::poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR)) != 0) return true;
  siginfo_t info{};
  // WNOWAIT: looked at, not reaped, so the pid stays its own until the
  // launcher reaps it.
  return ::waitid(P_PID, static_cast<id_t>(standby.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == standby.pid;
}

}  // namespace

Result<StandbyShepherd> StartStandbyShepherd(const ShepherdOptions& options) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    return Error::FromErrno(errno, "socketpair");
  }
  UniqueFd ours(ends[0]);
  UniqueFd theirs(ends[1]);
  const int flags = ::fcntl(ours.get(), F_GETFL);
  if (flags < 0 || ::fcntl(ours.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return Error::FromErrno(errno, "fcntl the standby's socket");
  }
  const pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno(errno, "fork");
  if (pid == 0) AwaitJob(theirs.get(), options);
  return StandbyShepherd{pid, std::move(ours)};
}

std::optional<std::string> MakeStandbyOrder(const std::string& request_text,
                                            const std::vector<std::string>& hide) {
  std::string order = EncodeStandbyOrder(request_text, hide);
  if (order.size() > kMaxStandbyOrder) return std::nullopt;
  return order;
}

Result<ShepherdChild> HandToStandby(StandbyShepherd standby, const std::string& order,
                                    const SpawnFds& fds) {
  const std::string who = "the standby shepherd (pid " + std::to_string(standby.pid) + ")";
  if (HasExited(standby)) {
    return Error(ErrorCode::kUnavailable, who + " has exited");
  }
  std::vector<int> passed{fds.buffer};
  if (fds.cgroup_dir >= 0) passed.push_back(fds.cgroup_dir);
  if (Result<void> sent = protocol::SendMessage(standby.channel.get(), order, passed); !sent) {
    // Whatever it got of the order, it never runs it now.
    (void)::kill(standby.pid, SIGKILL);
    return sent.error().WithContext(who);
  }
  return ShepherdChild{standby.pid, std::move(standby.channel)};
}

std::string EncodeStandbyOrder(const std::string& request_text,
                               const std::vector<std::string>& hide) {
  std::string bytes;
  for (const std::string& node : hide) {
    bytes += node;
    bytes += '\0';
  }
  bytes += '\0';
  bytes += request_text;
  return bytes;
}

Result<StandbyOrder> DecodeStandbyOrder(const std::string& bytes) {
  StandbyOrder order;
  std::size_t at = 0;
  for (;;) {
    const std::size_t end = bytes.find('\0', at);
    if (end == std::string::npos) {
      return InvalidArgument("a standby order without the end of its node list");
    }
    if (end == at) break;
    order.hide.push_back(bytes.substr(at, end - at));
    at = end + 1;
  }
  order.request_text = bytes.substr(at + 1);
  return order;
}

}  // namespace hpcb::launcher

#include "launcher/launcher_server.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "launcher/job_spawn.h"
#include "launcher/user_ops.h"
#include "protocol/base/log.h"
#include "protocol/launcher_messages.h"

namespace hpcb::launcher {
namespace {

using protocol::Decode;
using protocol::Encode;

struct DestArg {
  std::string path;
  std::uint64_t id;
};
Result<std::string> CheckBody(void* arg) {
  auto* a = static_cast<DestArg*>(arg);
  return CheckDestinationHere(a->path, a->id);
}

struct DeliverArg {
  int fd;
  std::string dest;
};
Result<std::string> DeliverBody(void* arg) {
  auto* a = static_cast<DeliverArg*>(arg);
  auto done = DeliverHere(a->fd, a->dest);
  if (!done) return done.error();
  return std::string();
}

}  // namespace

std::string LauncherServer::Handle(const protocol::Packet& packet) {
  auto type = protocol::PeekTag(packet.bytes, "type");
  std::string kind = type ? *type : "";
  if (kind == "spawn") {
    protocol::SpawnReply reply;
    auto request = Decode<protocol::SpawnRequest>(packet.bytes);
    if (!request) {
      reply.error = "failed to start job: " + request.error().message();
      return Encode(reply);
    }
    reply.id = request->id;
    auto allowed = CheckIdentityAllowed(request->who, as_root_);
    if (!allowed) {
      reply.error = "failed to start job: " + allowed.error().message();
      return Encode(reply);
    }
    if (packet.fds.empty() || packet.fds.size() > 2) {
      reply.error = "failed to start job: spawn needs the buffer (and cgroup) fds";
      return Encode(reply);
    }
    SpawnFds fds;
    fds.buffer = packet.fds[0].get();
    if (packet.fds.size() == 2) fds.cgroup_dir = packet.fds[1].get();
    auto pid = SpawnJob(*request, fds, as_root_);
    if (!pid) {
      reply.error = pid.error().message();
    } else {
      reply.pid = *pid;
    }
    return Encode(reply);
  }
  if (kind == "check_dest") {
    protocol::CheckDestReply reply;
    auto request = Decode<protocol::CheckDestRequest>(packet.bytes);
    if (!request) {
      reply.error = request.error().message();
      return Encode(reply);
    }
    reply.id = request->id;
    auto allowed = CheckIdentityAllowed(request->who, as_root_);
    if (!allowed) {
      reply.error = allowed.error().message();
      return Encode(reply);
    }
    DestArg arg{request->path, request->id};
    auto dest = RunAsUser(request->who, as_root_, &CheckBody, &arg);
    if (dest) {
      reply.dest = *dest;
    } else {
      reply.error = dest.error().message();
    }
    return Encode(reply);
  }
  if (kind == "deliver") {
    protocol::DeliverReply reply;
    auto request = Decode<protocol::DeliverRequest>(packet.bytes);
    if (!request || packet.fds.size() != 1) {
      reply.error = request ? "deliver needs the buffer fd" : request.error().message();
      return Encode(reply);
    }
    reply.id = request->id;
    auto allowed = CheckIdentityAllowed(request->who, as_root_);
    if (!allowed) {
      reply.error = allowed.error().message();
      return Encode(reply);
    }
    DeliverArg arg{packet.fds[0].get(), request->dest};
    auto done = RunAsUser(request->who, as_root_, &DeliverBody, &arg, 600);
    if (!done) reply.error = done.error().message();
    return Encode(reply);
  }
  LogWarning("refused an executor message of type '" + kind + "'");
  protocol::DeliverReply reply;
  reply.error = "unknown request type '" + kind + "'";
  return Encode(reply);
}

bool LauncherServer::ReapJobs() {
  for (Role* role : {&executor_, &broker_}) {
    int status = 0;
    if (role->pid > 0 && ::waitpid(role->pid, &status, WNOHANG) == role->pid) {
      LogError(role->name + " (pid " + std::to_string(role->pid) + ") exited with status " +
               std::to_string(status));
      role->wait_status = status;
      role->pid = -1;
      return false;
    }
  }
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return true;
    protocol::ChildExited event;
    event.pid = pid;
    event.status = status;
    auto sent = protocol::SendMessage(executor_fd_, Encode(event));
    if (!sent) LogError("lost the exit of pid " + std::to_string(pid) + ": " + sent.error().message());
  }
}

bool LauncherServer::RoleRefusedToStart() const {
  for (const Role* role : {&executor_, &broker_}) {
    if (role->wait_status >= 0 && WIFEXITED(role->wait_status) &&
        WEXITSTATUS(role->wait_status) == protocol::kExitConfig) {
      return true;
    }
  }
  return false;
}

void LauncherServer::StopRoles() {
  StopRole(broker_);
  StopRole(executor_);
}

LauncherServer::Outcome LauncherServer::Run() {
  for (;;) {
    struct pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {executor_fd_, POLLIN, 0}};
    int ready = ::poll(fds, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      StopRoles();
      return Outcome::kStop;
    }
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo info {};
      if (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT) {
          LogInfo("shutting down; leaving running jobs untouched");
          StopRoles();
          return Outcome::kStop;
        }
        if (info.ssi_signo == SIGHUP) {
          LogInfo("reloading: re-exec with running jobs preserved");
          StopRoles();
          return Outcome::kReload;
        }
        if (info.ssi_signo == SIGCHLD && !ReapJobs()) {
          StopRoles();
          return Outcome::kRoleDied;
        }
      }
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      auto packet = protocol::ReceiveMessage(executor_fd_);
      if (!packet) {
        if (packet.error().code() == ErrorCode::kUnavailable) {
          LogError("the executor went away");
          StopRoles();
          return Outcome::kRoleDied;
        }
        LogWarning("bad executor message: " + packet.error().message());
        protocol::DeliverReply reply;
        reply.error = packet.error().message();
        (void)protocol::SendMessage(executor_fd_, Encode(reply));
        continue;
      }
      std::string reply = Handle(*packet);
      auto sent = protocol::SendMessage(executor_fd_, reply);
      if (!sent) LogError("cannot answer the executor: " + sent.error().message());
    }
  }
}

}  // namespace hpcb::launcher

#include "launcher/launcher_app.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "launcher/launcher_server.h"
#include "launcher/launcher_setup.h"
#include "protocol/host/host_files.h"
#include "protocol/base/log.h"
#include "protocol/daemon_config.h"

namespace hpcb::launcher {
namespace {

Result<std::pair<UniqueFd, UniqueFd>> SeqPacketPair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return Error::FromErrno(errno, "socketpair");
  }
  return std::make_pair(UniqueFd(fds[0]), UniqueFd(fds[1]));
}

}  // namespace

int LauncherMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  protocol::ParsedFlags parsed = protocol::ParseDaemonFlags(args);
  if (parsed.exit_now) {
    (*parsed.exit_now == 0 ? std::cout : std::cerr) << parsed.output;
    return *parsed.exit_now;
  }
  const protocol::DaemonConfig& config = parsed.config;
  SetLogRole("launcher");
  SetLogLevel(config.log_level);
  ::umask(022);
  if (::chdir("/") != 0) return 1;
  const bool as_root = ::geteuid() == 0;

  auto checked = RunStartupChecks(config, as_root);
  if (!checked) {
    LogError(checked.error().message());
    return protocol::kExitConfig;
  }
  auto listener = ListenClientSocket(config.socket);
  if (!listener) {
    LogError("cannot listen on " + config.socket + ": " + listener.error().message());
    return protocol::kExitConfig;
  }
  auto exec_pair = SeqPacketPair();
  auto broker_pair = SeqPacketPair();
  if (!exec_pair || !broker_pair) {
    LogError("cannot create the role channels");
    return 1;
  }
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, sig);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  UniqueFd signal_fd(::signalfd(-1, &mask, SFD_CLOEXEC));
  if (!signal_fd.valid()) {
    LogError("signalfd failed");
    return 1;
  }
  std::vector<std::string> flags = protocol::ToFlags(config);
  auto executor = StartRole("hpc-batch-executor", exec_pair->second.get(),
                            broker_pair->first.get(), flags);
  if (!executor) {
    LogError("cannot start the executor: " + executor.error().message());
    return 1;
  }
  auto broker = StartRole("hpc-batch-broker", broker_pair->second.get(), listener->get(), flags);
  if (!broker) {
    Role e = *executor;
    StopRole(e);
    LogError("cannot start the broker: " + broker.error().message());
    return 1;
  }
  exec_pair->second.reset();
  broker_pair->first.reset();
  broker_pair->second.reset();
  listener->reset();

  auto cpus = host::ReadOnlineCpus(config.sys_root);
  LogInfo(std::string("hpc-batchd ") + protocol::kVersion + " ready on " + config.socket +
          " (" + std::to_string(cpus ? cpus->size() : 0) + " cpus; " +
          (config.no_cgroups ? "--no-cgroups: affinity only, one memory pool"
                             : "cgroups: cpuset+memory enforced") +
          "; executor pid " + std::to_string(executor->pid) + ", broker pid " +
          std::to_string(broker->pid) + ")");

  LauncherOptions options;
  options.as_root = as_root;
  options.run_dir = config.state_dir + "/run";
  LauncherServer server(options, exec_pair->first.get(), signal_fd.get(), *executor, *broker);
  LauncherServer::Outcome outcome = server.Run();
  if (outcome == LauncherServer::Outcome::kReload) {
    signal_fd.reset();
    exec_pair->first.reset();
    // Same pid, same argv: the jobs stay our children, zombies keep codes.
    ::execv("/proc/self/exe", argv);
    LogError(std::string("re-exec failed: ") + std::strerror(errno));
    return 1;
  }
  if (outcome == LauncherServer::Outcome::kStop) return 0;
  return server.RoleRefusedToStart() ? protocol::kExitConfig : 1;
}

}  // namespace hpcb::launcher

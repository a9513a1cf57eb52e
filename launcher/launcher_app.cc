#include "launcher/launcher_app.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/base/log.h"
#include "common/host/host_files.h"
#include "launcher/launcher_server.h"
#include "launcher/launcher_setup.h"
#include "launcher/root_flags.h"
#include "launcher/signal_reset.h"
#include "launcher/state_lock.h"

namespace hpcb::launcher {

int LauncherMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  SetLogRole("launcher");
  // First: with SIGCHLD ignored (inherited) the flag check could not be reaped.
  SetStartUpDispositions();
  Result<std::string> broker_path = BesideSelf("hpc-batch-broker");
  UniqueFd broker(broker_path ? ::open(broker_path->c_str(), O_PATH | O_CLOEXEC) : -1);
  if (!broker.valid()) {
    LogError("cannot find hpc-batch-broker beside hpc-batchd");
    return 1;
  }
  if (std::optional<int> exit_now = CheckFlagsAsNobody(broker.get(), args)) return *exit_now;
  broker.reset();
  // Every user helper execs this one (user_helper.h): the program installed
  // with this launcher, however the file is replaced while it runs.
  Result<std::string> as_user_path = BesideSelf("hpc-batch-as-user");
  UniqueFd as_user(as_user_path ? ::open(as_user_path->c_str(), O_PATH | O_CLOEXEC) : -1);
  if (!as_user.valid()) {
    LogError("cannot find hpc-batch-as-user beside hpc-batchd");
    return 1;
  }
  Result<protocol::RootConfig> parsed = ParseRootFlags(args);
  if (!parsed) {
    std::cerr << "hpc-batchd: " << parsed.error().message() << "\n";
    return 2;
  }
  protocol::RootConfig& config = *parsed;
  SetLogLevel(config.log_level);
  ::umask(022);
  if (::chdir("/") != 0) return 1;
  const bool as_root = ::geteuid() == 0;

  auto checked = RunStartupChecks(config, as_root);
  if (!checked) {
    LogError(checked.error().message());
    return protocol::kExitConfig;
  }
  // Before the socket: a second daemon must leave the first one's alone.
  Result<UniqueFd> state_lock = LockStateDir(config.state_dir);
  if (!state_lock) {
    LogError(state_lock.error().message());
    return protocol::kExitConfig;
  }
  auto listener = ListenClientSocket(config.socket);
  if (!listener) {
    LogError("cannot listen on " + config.socket + ": " + listener.error().message());
    return protocol::kExitConfig;
  }
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP})
    sigaddset(&mask, sig);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  UniqueFd signal_fd(::signalfd(-1, &mask, SFD_CLOEXEC));
  if (!signal_fd.valid()) {
    LogError("signalfd failed");
    return 1;
  }
  // The broker reads the daemon's own argv (it checked it above); the
  // executor gets the root flags as one message and parses no flags.
  const std::vector<std::string> executor_flags = {"--config", protocol::Encode(config)};
  // Kept open for the life of this launcher: a broker restarted after a
  // crash listens on the same socket.
  const int listen_fd = listener->get();
  LauncherServer server(
      config, as_root, signal_fd.get(), as_user.get(),
      [&args, &executor_flags, listen_fd] { return StartRoles(executor_flags, args, listen_fd); });
  if (!server.StartRoles()) return 1;
  auto cpus = host::ReadOnlineCpus(config.sys_root);
  LogInfo(std::string("hpc-batchd ") + protocol::kVersion + " ready on " + config.socket + " (" +
          std::to_string(cpus ? cpus->size() : 0) + " cpus; " +
          (config.no_cgroups ? "--no-cgroups: affinity only, one memory pool"
                             : "cgroups: cpuset+memory enforced") +
          ")");
  LauncherServer::Outcome outcome = server.Run();
  if (outcome == LauncherServer::Outcome::kReload) {
    signal_fd.reset();
    listener->reset();
    state_lock->reset();
    // Same pid, same argv: the jobs stay our children, zombies keep codes.
    ::execv("/proc/self/exe", argv);
    LogError(std::string("re-exec failed: ") + std::strerror(errno));
    return 1;
  }
  if (outcome == LauncherServer::Outcome::kStop) return 0;
  return server.RoleRefusedToStart() ? protocol::kExitConfig : 1;
}

}  // namespace hpcb::launcher

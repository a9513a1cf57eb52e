#include "executor/executor_app.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "common/base/log.h"
#include "common/base/unique_fd.h"
#include "common/host/host_files.h"
#include "executor/confine.h"
#include "executor/executor_server.h"
#include "protocol/root_config.h"

namespace hpcb::executor {
namespace {

Result<void> Confine(const protocol::RootConfig& config) {
  ConfinePaths paths;
  paths.read_write = {config.state_dir, config.cgroup_root};
  if (!config.no_dev_dir) paths.read_write.push_back(config.dev_dir);
  paths.read_only = {"/etc", "/proc", "/usr", "/lib", "/lib64", config.sys_root, "/dev/null"};
  HPCB_TRY(ReduceCapabilities());
  // A kernel without Landlock is a fact of the host; a kernel with it that
  // refuses our ruleset is a bug we would rather stop on than run unconfined.
  auto landlock = ApplyLandlock(paths);
  if (!landlock) {
    return landlock.error().WithContext("landlock");
  } else if (!*landlock) {
    LogInfo("landlock is not available in this kernel; skipping it");
  }
  return ApplySeccomp();
}

}  // namespace

int ExecutorMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  SetLogRole("executor");
  if (!args.empty() && (args[0] == "--print-policy" || args[0] == "--print-allowlist")) {
    auto printed = args[0] == "--print-policy" ? PrintSeccompPolicy(1) : PrintAllowList(1);
    if (!printed) {
      std::cerr << printed.error().message() << "\n";
      return 1;
    }
    return 0;
  }
  // Not 78 when this is wrong: it is no refusal of the site's config but
  // a launcher of another release (one running from before a package
  // upgrade, restarting its roles from the new files). Exiting 1 lets the
  // launcher give up and systemd start the new one, which passes it.
  Result<protocol::RootConfig> decoded =
      args.size() == 2 && args[0] == "--config"
          ? protocol::Decode<protocol::RootConfig>(args[1])
          : Result<protocol::RootConfig>(InvalidArgument("expected --config and one message"));
  if (!decoded) {
    LogError("cannot read the launcher's config: " + decoded.error().message() +
             " (started by an hpc-batchd of another release, or not by hpc-batchd at all)");
    return 1;
  }
  const protocol::RootConfig& config = *decoded;
  SetLogLevel(config.log_level);
  if (::fcntl(3, F_GETFD) < 0 || ::fcntl(4, F_GETFD) < 0) {
    LogError("fds 3 (launcher) and 4 (broker) must be open; started by hpc-batchd only");
    return 2;
  }
  ::fcntl(3, F_SETFD, FD_CLOEXEC);
  ::fcntl(4, F_SETFD, FD_CLOEXEC);

  ExecutorFacts facts;
  facts.as_root = ::geteuid() == 0;
  facts.self_uid = ::getuid();
  // The ids root needs were looked up by the launcher (this binary has no
  // NSS; docs/design.md, "Footprint"): the admin group's, which the job
  // dirs are given, and the broker's service user's, which may never pass
  // off a socket of its own as a submitter's.
  if (facts.as_root && !config.admin_gid) {
    LogError(
        "no admin group gid was passed: this executor was started by an hpc-batchd of another "
        "release (restart the service after an upgrade), or not by hpc-batchd at all");
    return 1;
  }
  auto cpus = host::ReadOnlineCpus(config.sys_root);
  auto nodes = host::ReadNumaNodes(config.sys_root);
  if (!cpus || !nodes) {
    LogError("cannot read the cpu/node topology under " + config.sys_root);
    return protocol::kExitConfig;
  }
  facts.cpus = *cpus;
  facts.nodes = *nodes;
  const char* lang = std::getenv("LANG");
  facts.lang = lang ? lang : "";

  // What the previous executor wrote but had not flushed (a rename of a
  // turn it was killed in) reads back from the page cache as if durable:
  // the whole filesystem is flushed once, before this executor can answer
  // anyone about it.
  if (UniqueFd state(::open(config.state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      !state.valid() || ::syncfs(state.get()) != 0) {
    LogError("cannot flush the state directory " + config.state_dir + ": " + std::strerror(errno));
    return 1;
  }
  // Stopped by its broker channel closing, not by a signal: the launcher
  // stops the broker first, and this executor then sends its last answers
  // and commits its last turn before it exits (a clean stop). A SIGTERM in
  // between would cut that short; a SIGKILL at the launcher's deadline is
  // still safe (what was answered is on disk).
  (void)::signal(SIGTERM, SIG_IGN);
  auto confined = Confine(config);
  if (!confined) {
    // 78: systemd must not restart into the same failure (RestartPreventExitStatus).
    LogError("cannot confine the executor: " + confined.error().message());
    return protocol::kExitConfig;
  }
  ExecutorServer server(config, facts, 3, 4);
  server.Recover();
  auto ran = server.Run();
  if (!ran) {
    LogError(ran.error().message());
    // A state directory an admin must see to first (an older release's
    // journal): systemd must not restart into the same refusal.
    return ran.error().code() == ErrorCode::kFailedPrecondition && server.recovery_failed()
               ? protocol::kExitConfig
               : 1;
  }
  return 0;
}

}  // namespace hpcb::executor

#include "broker/broker_app.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <memory>
#include <optional>
#include <string>

#include "broker/broker_core.h"
#include "broker/broker_server.h"
#include "broker/confine.h"
#include "broker/executor_channel.h"
#include "broker/permissions.h"
#include "broker/queue_store.h"
#include "broker/scheduler.h"
#include "common/base/log.h"
#include "common/host/accounts.h"
#include "common/units.h"

namespace hpcb::broker {
namespace {

volatile std::sig_atomic_t g_stop = 0;

void OnStopSignal(int) {
  g_stop = 1;
}

Result<void> InstallSignals() {
  struct sigaction stop {};
  stop.sa_handler = OnStopSignal;
  sigemptyset(&stop.sa_mask);
  if (::sigaction(SIGTERM, &stop, nullptr) != 0 || ::sigaction(SIGINT, &stop, nullptr) != 0) {
    return Error::FromErrno(errno, "sigaction");
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  if (::sigaction(SIGPIPE, &ignore, nullptr) != 0 || ::sigaction(SIGHUP, &ignore, nullptr) != 0) {
    return Error::FromErrno(errno, "sigaction");
  }
  return Ok();
}

int Refuse(const Error& error) {
  LogError(error.message());
  return protocol::kExitConfig;
}

bool FdOpen(int fd) {
  return ::fcntl(fd, F_GETFD) >= 0;
}

}  // namespace

int RunBroker(const DaemonConfig& config) {
  if (!FdOpen(kExecutorFd) || !FdOpen(kListenFd)) {
    LogError("the broker is started by hpc-batchd (fd 3: executor channel, fd 4: client socket)");
    return protocol::kExitConfig;
  }
  (void)::fcntl(kExecutorFd, F_SETFD, FD_CLOEXEC);
  (void)::fcntl(kListenFd, F_SETFD, FD_CLOEXEC);
  if (Result<void> signals = InstallSignals(); !signals) return Refuse(signals.error());

  const bool as_root = ::geteuid() == 0;
  const std::string state_dir = config.state_dir + "/broker";
  std::optional<ServiceUser> service;
  if (as_root) {
    Result<ServiceUser> user = LookupServiceUser(config.broker_user);
    if (!user) return Refuse(user.error());
    service = *user;
  }
  if (Result<void> dir = PrepareStateDir(state_dir, service ? &*service : nullptr); !dir) {
    return Refuse(dir.error());
  }

  // Every client connection holds a descriptor (an attach two): the soft
  // limit (1024 under systemd) would cap connections below what the
  // per-uid shares assume.
  struct rlimit files {};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &files);
  }

  // Discovery runs nvidia-smi, so it happens before the seccomp filter.
  Result<Machine> machine = DiscoverMachine(config, !config.no_cgroups);
  if (!machine) return Refuse(machine.error());
  std::unique_ptr<Policy> policy = MakePolicy(config.schedule);
  if (!policy) return Refuse(InvalidArgument("unknown --schedule '" + config.schedule + "'"));

  // As the launcher words it as root (its suggestions, sorted), so user
  // mode is told the same.
  if (Result<gid_t> admin = host::ResolveAdminGroup(config.admin_group); !admin) {
    return Refuse(InvalidArgument(admin.error().message()));
  }
  SystemUserDb users;
  const std::string admin_group = ResolveAdminGroup(config.admin_group, users);

  // One membership lookup before the filter loads every NSS module the
  // group database uses, so none is first dlopen()ed under seccomp.
  (void)users.InGroup(::getuid(), admin_group);

  if (service) {
    if (Result<void> dropped = DropToUser(*service); !dropped) return Refuse(dropped.error());
  }
  if (Result<void> confined = ApplySeccomp(); !confined) return Refuse(confined.error());

  SystemClock clock;
  QueueStore store(state_dir);
  Result<QueueFile> loaded = store.Load();
  if (!loaded) return Refuse(loaded.error());

  PoolScheduler scheduler(*machine, std::move(policy), config.min_job_mem_gib);
  SocketExecutorChannel executor{UniqueFd(kExecutorFd)};
  Permissions permissions(users, admin_group);
  CoreOptions options;
  options.max_lifetime_s = config.max_lifetime_s;
  options.keep_finished = config.keep_finished;
  options.list_is_public = config.list_is_public;
  options.max_queued_per_user = config.max_queued_per_user;
  options.policy = config.schedule;
  for (int gpu : machine->gpus.ids)
    options.gpu_count = std::max<std::int64_t>(options.gpu_count, gpu + 1);
  if (!as_root) options.only_uid = ::getuid();
  BrokerCore core(options, scheduler, executor, clock, permissions, &store);
  if (Result<void> started = core.Start(std::move(loaded).value()); !started) {
    LogError("broker start-up failed: " + started.error().message());
    return 1;
  }
  LogInfo(std::string("broker ready (schedule=") + config.schedule +
          " max_lifetime=" + FormatDuration(config.max_lifetime_s) + " admin_group=" + admin_group +
          " list_is_public=" + (config.list_is_public ? "true" : "false") + ")");
  BrokerServer server(core, executor, clock, UniqueFd(kListenFd));
  Result<void> ran = server.Run(&g_stop);
  (void)core.Persist();
  if (!ran) {
    LogError(ran.error().message());
    return 1;
  }
  LogInfo("broker shutting down");
  return 0;
}

}  // namespace hpcb::broker

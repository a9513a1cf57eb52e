#include "launcher/launcher_setup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "common/base/log.h"
#include "common/host/accounts.h"
#include "common/host/host_files.h"
#include "launcher/child_fds.h"
#include "launcher/child_reap.h"
#include "launcher/dumpable_check.h"
#include "launcher/gpu_mask.h"

namespace hpcb::launcher {
namespace {

Error Refusal(const std::string& message) {
  return Error(ErrorCode::kFailedPrecondition, message);
}

const char kCgroupHint[] = "; pass --no-cgroups to run without isolation (development only)";

Result<void> MakeDirs(const std::string& path, mode_t mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec)
    return Error(ErrorCode::kFailedPrecondition,
                 "cannot create " + path + " (" + ec.message() + ")");
  if (::chmod(path.c_str(), mode) != 0) return Error::FromErrno(errno, "chmod " + path);
  return Ok();
}

Result<void> CheckCgroups(const protocol::RootConfig& config, bool as_root) {
  if (config.no_cgroups) return Ok();
  const std::string& root = config.cgroup_root;
  if (::access((root + "/cgroup.controllers").c_str(), F_OK) != 0) {
    return Refusal("cgroup v2 is not available at " + root +
                   ". This daemon needs a unified cgroup hierarchy" + kCgroupHint);
  }
  if (!as_root)
    return Refusal(std::string("cgroups need root; user mode requires --no-cgroups") + kCgroupHint);
  std::string ours = root + "/hpc-batch";
  if (::mkdir(ours.c_str(), 0755) != 0 && errno != EEXIST) {
    return Refusal("cannot create the job cgroup " + ours + " (" + std::strerror(errno) +
                   "). The daemon must run as root" + kCgroupHint);
  }
  auto controllers = host::ReadSmallFile(ours + "/cgroup.controllers");
  std::string text = controllers ? *controllers : "";
  std::string missing;
  for (const char* name : {"cpuset", "memory"}) {
    if ((" " + text + " ").find(std::string(" ") + name) == std::string::npos) {
      missing += (missing.empty() ? "" : ", ") + std::string(name);
    }
  }
  if (!missing.empty()) {
    return Refusal("the " + missing + " controller(s) are not available in " + ours +
                   ", so jobs cannot be confined to a NUMA node. Check that the unit still has "
                   "'Delegate=cpuset memory pids'" +
                   kCgroupHint);
  }
  auto enabled = host::ReadSmallFile(ours + "/cgroup.subtree_control");
  for (const char* name : {"cpuset", "memory"}) {
    if (enabled && enabled->find(name) != std::string::npos) continue;
    int fd = ::open((ours + "/cgroup.subtree_control").c_str(), O_WRONLY | O_CLOEXEC);
    std::string line = std::string("+") + name;
    bool ok = fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    int saved = errno;
    if (fd >= 0) ::close(fd);
    if (!ok) {
      return Refusal(std::string("could not enable the ") + name + " controller in " + ours + " (" +
                     std::strerror(saved) + ")" + kCgroupHint);
    }
  }
  return Ok();
}

Result<void> PrepareDirs(const protocol::RootConfig& config, bool as_root) {
  if (::access(config.state_dir.c_str(), F_OK) == 0 &&
      ::access(config.state_dir.c_str(), W_OK | X_OK) != 0) {
    return Refusal("the state directory " + config.state_dir + " is not writable");
  }
  // jobs/ holds the users' job dirs; specs/ and run/ are root's alone.
  for (const auto& [sub, mode] : {std::pair{"/jobs", 0755}, {"/specs", 0700}, {"/run", 0700}}) {
    if (auto made = MakeDirs(config.state_dir + sub, static_cast<mode_t>(mode)); !made) {
      return Refusal("cannot use the state directory " + config.state_dir + ": " +
                     made.error().message());
    }
    if (as_root && mode == 0700 && ::chown((config.state_dir + sub).c_str(), 0, 0) != 0) {
      return Refusal("cannot chown " + config.state_dir + sub);
    }
  }
  std::string socket_dir = std::filesystem::path(config.socket).parent_path();
  if (!socket_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(socket_dir, ec);
    if (ec)
      return Refusal("cannot create the socket directory " + socket_dir + " (" + ec.message() +
                     ")");
  }
  if (!config.no_dev_dir) {
    auto dev = MakeDirs(config.dev_dir + "/jobs", 0755);
    if (!dev) {
      return Refusal("cannot create " + config.dev_dir + " (" + dev.error().message() +
                     "); pass --no-dev-dir to run without the job inspection entries");
    }
  }
  return Ok();
}

}  // namespace

Result<void> RunStartupChecks(protocol::RootConfig& config, bool as_root) {
  if (!as_root && !config.no_cgroups) {
    return Refusal("running as a normal user (user mode) needs --no-cgroups" +
                   std::string(kCgroupHint));
  }
  if (as_root) {
    Result<gid_t> admin = host::ResolveAdminGroup(config.admin_group);
    if (!admin) return Refusal(admin.error().message());
    // As the broker would refuse a service user it cannot find, rather than
    // leave the executor's "the broker never submits" check unarmed.
    Result<uid_t> broker = host::LookUpUid(config.broker_user);
    if (!broker) return Refusal("--broker-user: " + broker.error().message());
    config.admin_gid = *admin;
    config.broker_uid = *broker;
    if (Result<void> safe = CheckSuidDumpable(config.proc_root); !safe) {
      return Refusal(safe.error().message());
    }
  }
  // Cards present (as nodes, or in the driver's list) and masking on: the
  // daemon can hide them, or it refuses to run jobs that could reach every
  // card. No cards: nothing to hide.
  if (!config.no_gpu_mask) {
    const std::vector<int> nodes = CardNodes(config.gpu_dev_dir);
    const std::vector<int> driver = DriverCards(config.gpu_driver_dir);
    if (!nodes.empty() || !driver.empty()) {
      if (Result<void> probed = ProbeGpuMasking(); !probed) {
        return Refusal(probed.error().message());
      }
    }
    const std::vector<int> missing = CardsWithoutNodes(driver, nodes);
    // Not a refusal: the nodes may be made after the daemon starts; until
    // they are, each start is refused with this message.
    if (!missing.empty()) LogWarning(MissingNodesError(config.gpu_dev_dir, missing).message());
  }
  // Last, so that a refused start leaves no directory behind.
  HPCB_TRY(CheckCgroups(config, as_root));
  return PrepareDirs(config, as_root);
}

Result<UniqueFd> ListenClientSocket(const std::string& path) {
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return InvalidArgument("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Error::FromErrno(errno, "socket");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(path.c_str());
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Error::FromErrno(errno, "bind " + path);
  }
  if (::chmod(path.c_str(), 0666) != 0) return Error::FromErrno(errno, "chmod " + path);
  if (::listen(fd.get(), SOMAXCONN) != 0) return Error::FromErrno(errno, "listen " + path);
  return fd;
}

Result<std::string> BesideSelf(const std::string& binary) {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return Error(ErrorCode::kInternal, "cannot read /proc/self/exe");
  return (self.parent_path() / binary).string();
}

namespace {

// Forks and execs DIR_OF(/proc/self/exe)/binary with `fd3` and `fd4` as
// fds 3 and 4 and `flags` as argv.
Result<Role> StartRole(const std::string& binary, int fd3, int fd4,
                       const std::vector<std::string>& flags) {
  HPCB_ASSIGN_OR_RETURN(std::string path, BesideSelf(binary));
  std::vector<std::string> args{path};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<int> channels{fd3, fd4};
  pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno(errno, "fork");
  if (pid == 0) {
    if (!KeepOnlyFds(channels)) ::_exit(126);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return Role{pid, binary};
}

Result<std::pair<UniqueFd, UniqueFd>> SeqPacketPair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return Error::FromErrno(errno, "socketpair");
  }
  return std::make_pair(UniqueFd(fds[0]), UniqueFd(fds[1]));
}

}  // namespace

Result<RoleSet> StartRoles(const std::vector<std::string>& executor_flags,
                           const std::vector<std::string>& broker_flags, int listener) {
  HPCB_ASSIGN_OR_RETURN(auto exec_pair, SeqPacketPair());
  HPCB_ASSIGN_OR_RETURN(auto broker_pair, SeqPacketPair());
  Result<Role> executor = StartRole("hpc-batch-executor", exec_pair.second.get(),
                                    broker_pair.first.get(), executor_flags);
  if (!executor) return executor.error().WithContext("cannot start the executor");
  Result<Role> broker =
      StartRole("hpc-batch-broker", broker_pair.second.get(), listener, broker_flags);
  if (!broker) {
    StopRole(*executor);
    return broker.error().WithContext("cannot start the broker");
  }
  return RoleSet{*executor, *broker, std::move(exec_pair.first)};
}

void StopRole(Role& role, int grace_ms) {
  if (role.pid <= 0) return;
  ::kill(role.pid, SIGTERM);
  const Reaped reaped =
      ReapWithin(role.pid, std::chrono::milliseconds(grace_ms), std::chrono::milliseconds(20));
  if (reaped.how == Reaped::How::kEnded) role.wait_status = reaped.status;
  role.pid = -1;
}

}  // namespace hpcb::launcher

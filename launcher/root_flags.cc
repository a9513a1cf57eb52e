#include "launcher/root_flags.h"

#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/base/log.h"
#include "launcher/child_reap.h"

extern char** environ;

namespace hpcb::launcher {

using protocol::RootConfig;

const std::vector<FlagRow>& FlagTable() {
  static const std::vector<FlagRow> kRows = {
      {"--socket", true, &RootConfig::socket},
      {"--state-dir", true, &RootConfig::state_dir},
      {"--dev-dir", true, &RootConfig::dev_dir},
      {"--no-cgroups", false, &RootConfig::no_cgroups},
      {"--no-dev-dir", false, &RootConfig::no_dev_dir},
      {"--log-level", true, &RootConfig::log_level},
      {"--sys-root", true, &RootConfig::sys_root},
      {"--cgroup-root", true, &RootConfig::cgroup_root},
      {"--proc-root", true, &RootConfig::proc_root},
      {"--no-gpu-mask", false, &RootConfig::no_gpu_mask},
      {"--gpu-dev-dir", true, &RootConfig::gpu_dev_dir},
      {"--gpu-driver-dir", true, &RootConfig::gpu_driver_dir},
      {"--admin-group", true, &RootConfig::admin_group},
      {"--broker-user", true, &RootConfig::broker_user},
      {"--max-user-state-mib", true, &RootConfig::max_user_state_mib},
      {"--max-output-mib", true, &RootConfig::max_output_mib},
      {"--max-lifetime", true, {}},
      {"--list-is-public", false, {}},
      {"--keep-finished", true, {}},
      {"--reserve-cpu", true, {}},
      {"--cpu-unit", true, {}},
      {"--reserve-mem", true, {}},
      {"--min-job-mem", true, {}},
      {"--schedule", true, {}},
      {"--nvidia-smi", true, {}},
      {"--max-queued-per-user", true, {}},
  };
  return kRows;
}

namespace {

Result<void> Set(RootConfig& config, const FlagRow& row, std::string_view value) {
  const std::string flag(row.name);
  if (auto* text = std::get_if<std::string RootConfig::*>(&row.target)) {
    config.*(*text) = std::string(value);
    const bool is_path = flag.ends_with("-dir") || flag.ends_with("-root") || flag == "--socket";
    if (is_path && !value.starts_with('/')) {
      return InvalidArgument(flag + " must be an absolute path, not '" + std::string(value) + "'");
    }
  } else if (auto* number = std::get_if<std::int64_t RootConfig::*>(&row.target)) {
    std::int64_t parsed = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (value.empty() || error != std::errc() || end != value.data() + value.size() || parsed < 1) {
      return InvalidArgument(flag + " needs a positive integer, not '" + std::string(value) + "'");
    }
    config.*(*number) = parsed;
  } else if (auto* boolean = std::get_if<bool RootConfig::*>(&row.target)) {
    config.*(*boolean) = true;
  }
  return Ok();
}

}  // namespace

Result<protocol::RootConfig> ParseRootFlags(const std::vector<std::string>& args) {
  RootConfig config;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::optional<std::string_view> value;
    if (std::size_t equals = arg.find('='); arg.starts_with("--") && equals != arg.npos) {
      value = arg.substr(equals + 1);
      arg = arg.substr(0, equals);
    }
    const FlagRow* row = nullptr;
    for (const FlagRow& candidate : FlagTable()) {
      if (candidate.name == arg) row = &candidate;
    }
    if (row == nullptr)
      return InvalidArgument("hpc-batchd does not know the flag '" + args[i] + "'");
    if (!row->takes_value && value) {
      return InvalidArgument(std::string(arg) + " takes no value (give it alone to turn it on)");
    }
    if (row->takes_value && !value) {
      if (i + 1 == args.size()) return InvalidArgument(std::string(arg) + " needs a value");
      value = args[++i];
    }
    HPCB_TRY(Set(config, *row, value.value_or("")));
  }
  return config;
}

std::optional<int> CheckFlagsAsNobody(int broker_fd, const std::vector<std::string>& args) {
  std::vector<std::string> argv_text{"hpc-batch-broker", protocol::kCheckFlagsArg};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_text)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  const bool as_root = ::geteuid() == 0;
  const pid_t pid = ::fork();
  if (pid < 0) {
    LogError(std::string("cannot fork the flag check: ") + std::strerror(errno));
    return 1;
  }
  if (pid == 0) {
    constexpr id_t kNobody = 65534;
    if (as_root && (::setgroups(0, nullptr) != 0 || ::setresgid(kNobody, kNobody, kNobody) != 0 ||
                    ::setresuid(kNobody, kNobody, kNobody) != 0)) {
      ::_exit(126);
    }
    // Nothing of ours goes along: after a reload this process holds the
    // jobs' channels, which no process of nobody's may ever hold.
    if (::dup2(broker_fd, 3) < 0 || ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(126);
    ::syscall(SYS_close_range, 4u, ~0u, 0u);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::fexecve(3, argv.data(), environ);
    ::_exit(127);
  }
  const Reaped reaped = ReapWithin(pid, std::chrono::seconds(10), std::chrono::milliseconds(5));
  if (reaped.how != Reaped::How::kEnded || !WIFEXITED(reaped.status)) {
    LogError("the flag check (hpc-batch-broker " + std::string(protocol::kCheckFlagsArg) +
             ") did not finish; not starting");
    return 1;
  }
  const int code = WEXITSTATUS(reaped.status);
  if (code == 0) return std::nullopt;
  if (code == protocol::kFlagsAnswered) return 0;
  if (code >= 126)
    LogError("cannot run hpc-batch-broker to check the flags (exit " + std::to_string(code) + ")");
  return code;
}

}  // namespace hpcb::launcher

#include "protocol/daemon_config.h"

#include <charconv>
#include <cstdio>
#include <sstream>

#include <CLI/CLI.hpp>

#include "protocol/base/units.h"

namespace hpcb::protocol {
namespace {

// CLI11 validator wrapping a Result-returning parser.
template <class Parse>
CLI::Validator ResultValidator(Parse parse, const char* name) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        auto parsed = parse(text);
        return parsed ? std::string() : parsed.error().message();
      },
      name);
}

constexpr const char* kAdminGidFlag = "--resolved-admin-gid";
constexpr const char* kBrokerUidFlag = "--resolved-broker-uid";

}  // namespace

std::vector<std::string> ToFlags(const ResolvedIds& ids) {
  std::vector<std::string> out;
  if (ids.admin_gid) out.insert(out.end(), {kAdminGidFlag, std::to_string(*ids.admin_gid)});
  if (ids.broker_uid) out.insert(out.end(), {kBrokerUidFlag, std::to_string(*ids.broker_uid)});
  return out;
}

Result<ResolvedIds> TakeResolvedIds(std::vector<std::string>& args) {
  // Only from the end, where the launcher puts them: earlier, the same text
  // may be the value of a daemon flag (a socket path, say).
  ResolvedIds ids;
  auto is_ours = [](const std::string& arg) {
    return arg == kAdminGidFlag || arg == kBrokerUidFlag;
  };
  if (!args.empty() && is_ours(args.back()))
    return InvalidArgument(args.back() + " needs a number");
  while (args.size() >= 2 && is_ours(args[args.size() - 2])) {
    const std::string flag = args[args.size() - 2];
    const std::string text = args.back();
    std::optional<std::uint32_t>& slot = flag == kAdminGidFlag ? ids.admin_gid : ids.broker_uid;
    if (slot.has_value()) return InvalidArgument(flag + " is given twice");
    std::uint32_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
      return InvalidArgument(flag + " needs a number, not '" + text + "'");
    }
    slot = value;
    args.resize(args.size() - 2);
  }
  return ids;
}

const std::vector<std::string>& AdminGroupCandidates() {
  static const std::vector<std::string> kCandidates = {"wheel", "sudo", "adm", "staff"};
  return kCandidates;
}

ParsedFlags ParseDaemonFlags(const std::vector<std::string>& args) {
  ParsedFlags parsed;
  DaemonConfig& c = parsed.config;
  CLI::App app("hpc-batchd: the hpc-batch daemon (launcher, executor, broker)", "hpc-batchd");
  app.set_version_flag("--version", std::string("hpc-batchd ") + kVersion);
  std::string max_lifetime, reserve_mem, min_job_mem;
  app.add_option("--max-lifetime", max_lifetime,
                 "ceiling and default for every job's max-time (default 1d)")
      ->check(ResultValidator(ParseDuration, "DURATION"));
  app.add_flag("--list-is-public", c.list_is_public, "let every user run 'list --all'");
  app.add_option("--admin-group", c.admin_group,
                 "group whose members administer jobs (default: first of wheel, sudo, adm, staff)");
  app.add_option("--socket", c.socket, "client socket path")->capture_default_str();
  app.add_option("--state-dir", c.state_dir, "state directory")->capture_default_str();
  app.add_option("--dev-dir", c.dev_dir, "job inspection entries")->capture_default_str();
  app.add_option("--keep-finished", c.keep_finished, "finished jobs remembered per user")
      ->capture_default_str();
  app.add_option("--reserve-cpu", c.reserve_cpu,
                 "cpus held back for the system (whole cores under --cpu-unit core)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--cpu-unit", c.cpu_unit,
                 "core: jobs get whole physical cores, SMT siblings included; thread: single "
                 "logical cpus")
      ->check(CLI::IsMember({"core", "thread"}))
      ->capture_default_str();
  app.add_option("--reserve-mem", reserve_mem, "GiB held back for the system (default 2)")
      ->check(ResultValidator(ParseMemoryGiB, "GB"));
  app.add_option("--min-job-mem", min_job_mem, "floor of a defaulted budget, GiB (default 2)")
      ->check(ResultValidator(ParseMemoryGiB, "GB"));
  app.add_flag("--no-cgroups", c.no_cgroups,
               "cpu-affinity pinning only, one machine-wide memory pool (development only)");
  app.add_flag("--no-dev-dir", c.no_dev_dir, "no /dev job inspection entries");
  app.add_option("--schedule", c.schedule, "scheduling policy")
      ->check(CLI::IsMember({"fifo-strict", "easy-backfill", "strict-backfill"}))
      ->capture_default_str();
  app.add_option("--log-level", c.log_level, "debug, info, warning or error")
      ->transform(CLI::IsMember({"debug", "info", "warning", "error"}, CLI::ignore_case))
      ->capture_default_str();
  app.add_option("--sys-root", c.sys_root, "sysfs root (tests point it at a fake tree)")
      ->capture_default_str();
  app.add_option("--cgroup-root", c.cgroup_root, "cgroup2 mount")->capture_default_str();
  app.add_option("--proc-root", c.proc_root,
                 "where sys/fs/suid_dumpable is read (tests point it at a fake tree)")
      ->capture_default_str();
  app.add_option("--nvidia-smi", c.nvidia_smi, "nvidia-smi to query for GPUs")
      ->capture_default_str();
  app.add_flag("--no-gpu-mask", c.no_gpu_mask,
               "leave every GPU's device node visible to every job (development only)");
  app.add_option("--gpu-dev-dir", c.gpu_dev_dir,
                 "where the per-card nodes nvidiaN are (tests point it at a fake tree)")
      ->capture_default_str();
  app.add_option("--gpu-driver-dir", c.gpu_driver_dir,
                 "where the NVIDIA driver lists its cards (tests point it at a fake tree)")
      ->capture_default_str();
  app.add_option("--broker-user", c.broker_user, "service user the broker runs as (root mode)")
      ->capture_default_str();
  app.add_option("--max-queued-per-user", c.max_queued_per_user,
                 "queued jobs one user may have; more submissions are refused")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-user-state-mib", c.max_user_state_mib,
                 "MiB of launch specs and undelivered output one user may hold")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-output-mib", c.max_output_mib,
                 "largest output delivered, MiB (larger output is kept and reported)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    parsed.exit_now = app.exit(e, out, err);
    parsed.output = out.str() + err.str();
    return parsed;
  }
  if (!max_lifetime.empty()) c.max_lifetime_s = *ParseDuration(max_lifetime);
  if (!reserve_mem.empty()) c.reserve_mem_gib = *ParseMemoryGiB(reserve_mem);
  if (!min_job_mem.empty()) c.min_job_mem_gib = *ParseMemoryGiB(min_job_mem);
  if (c.max_lifetime_s < 1) {
    parsed.exit_now = 2;
    parsed.output = "--max-lifetime must be at least 1s\n";
  }
  if (c.keep_finished < 0) c.keep_finished = 0;
  return parsed;
}

std::vector<std::string> ToFlags(const DaemonConfig& c) {
  auto number = [](double v) {
    char buffer[64];
    (void)std::snprintf(buffer, sizeof buffer, "%.17g", v);  // %.17g fits in 64 bytes
    return std::string(buffer);
  };
  std::vector<std::string> out = {"--max-lifetime",
                                  std::to_string(c.max_lifetime_s),
                                  "--socket",
                                  c.socket,
                                  "--state-dir",
                                  c.state_dir,
                                  "--dev-dir",
                                  c.dev_dir,
                                  "--keep-finished",
                                  std::to_string(c.keep_finished),
                                  "--reserve-cpu",
                                  std::to_string(c.reserve_cpu),
                                  "--cpu-unit",
                                  c.cpu_unit,
                                  "--reserve-mem",
                                  number(c.reserve_mem_gib),
                                  "--min-job-mem",
                                  number(c.min_job_mem_gib),
                                  "--schedule",
                                  c.schedule,
                                  "--log-level",
                                  c.log_level,
                                  "--sys-root",
                                  c.sys_root,
                                  "--cgroup-root",
                                  c.cgroup_root,
                                  "--proc-root",
                                  c.proc_root,
                                  "--nvidia-smi",
                                  c.nvidia_smi,
                                  "--gpu-dev-dir",
                                  c.gpu_dev_dir,
                                  "--gpu-driver-dir",
                                  c.gpu_driver_dir,
                                  "--broker-user",
                                  c.broker_user,
                                  "--max-queued-per-user",
                                  std::to_string(c.max_queued_per_user),
                                  "--max-user-state-mib",
                                  std::to_string(c.max_user_state_mib),
                                  "--max-output-mib",
                                  std::to_string(c.max_output_mib)};
  if (!c.admin_group.empty()) {
    out.push_back("--admin-group");
    out.push_back(c.admin_group);
  }
  if (c.list_is_public) out.push_back("--list-is-public");
  if (c.no_cgroups) out.push_back("--no-cgroups");
  if (c.no_dev_dir) out.push_back("--no-dev-dir");
  if (c.no_gpu_mask) out.push_back("--no-gpu-mask");
  return out;
}

}  // namespace hpcb::protocol

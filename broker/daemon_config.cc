#include "broker/daemon_config.h"

#include <charconv>
#include <cstdio>
#include <sstream>

#include <CLI/CLI.hpp>

#include "common/units.h"

namespace hpcb::broker {
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

// The text flags whose values CLI11 only checks; ParseDaemonFlags converts them.
struct UnitTexts {
  std::string max_lifetime, reserve_mem, min_job_mem;
};

void DefineFlags(CLI::App& app, DaemonConfig& c, UnitTexts& texts) {
  app.set_version_flag("--version", std::string("hpc-batchd ") + protocol::kVersion);
  std::string& max_lifetime = texts.max_lifetime;
  std::string& reserve_mem = texts.reserve_mem;
  std::string& min_job_mem = texts.min_job_mem;
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
}

constexpr const char* kAbout = "hpc-batchd: the hpc-batch daemon (launcher, executor, broker)";

}  // namespace

ParsedFlags ParseDaemonFlags(const std::vector<std::string>& args) {
  ParsedFlags parsed;
  DaemonConfig& c = parsed.config;
  CLI::App app(kAbout, "hpc-batchd");
  UnitTexts texts;
  DefineFlags(app, c, texts);
  const std::string& max_lifetime = texts.max_lifetime;
  const std::string& reserve_mem = texts.reserve_mem;
  const std::string& min_job_mem = texts.min_job_mem;
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

int CheckDaemonFlags(const std::vector<std::string>& args) {
  ParsedFlags parsed = ParseDaemonFlags(args);
  if (!parsed.exit_now) return 0;
  (void)std::fputs(parsed.output.c_str(), *parsed.exit_now == 0 ? stdout : stderr);
  return *parsed.exit_now == 0 ? protocol::kFlagsAnswered : *parsed.exit_now;
}

std::vector<std::pair<std::string, bool>> DaemonFlagArities() {
  CLI::App app(kAbout, "hpc-batchd");
  DaemonConfig config;
  UnitTexts texts;
  DefineFlags(app, config, texts);
  std::vector<std::pair<std::string, bool>> out;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      if (name != "help" && name != "version")
        out.emplace_back("--" + name, option->get_expected_max() > 0);
    }
  }
  return out;
}

}  // namespace hpcb::broker

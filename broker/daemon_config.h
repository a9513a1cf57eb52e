// DaemonConfig: every flag of hpc-batchd. The broker owns the definition
// (CLI11, help, units, checks): it reads the daemon's argv as it starts, and
// checks it for the launcher first (`--check-daemon-flags`, as nobody), so
// that no flag library runs as root. The root side reads only the
// RootConfig part, by a table of its own (launcher/root_flags.h).
#ifndef HPCB_BROKER_DAEMON_CONFIG_H_
#define HPCB_BROKER_DAEMON_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/root_config.h"

namespace hpcb::broker {

struct DaemonConfig : protocol::RootConfig {
  std::int64_t max_lifetime_s = 86400;
  bool list_is_public = false;
  std::int64_t keep_finished = 50;
  std::int64_t reserve_cpu = 2;
  // "core": jobs get whole physical cores (all SMT siblings), so no two
  // jobs share one; "thread": each logical cpu is handed out on its own.
  std::string cpu_unit = "core";
  double reserve_mem_gib = 2.0;
  double min_job_mem_gib = 2.0;
  std::string schedule = "fifo-strict";
  std::string nvidia_smi = "nvidia-smi";
  // Queued jobs one user may have, so that one user cannot fill the queue.
  std::int64_t max_queued_per_user = 10000;
};

struct ParsedFlags {
  DaemonConfig config;
  std::optional<int> exit_now;  // --help/--version/usage error: exit code
  std::string output;           // what to print before exiting
};

// Parses hpc-batchd's argv (CLI11). Never throws.
ParsedFlags ParseDaemonFlags(const std::vector<std::string>& args);

// `--check-daemon-flags ARGS` for the launcher: prints what ParseDaemonFlags
// would print and returns the exit code protocol::kCheckFlagsArg documents.
int CheckDaemonFlags(const std::vector<std::string>& args);

// Each flag's long name and whether it takes a value, from the CLI11
// definition (for the test that holds the launcher's table to it).
std::vector<std::pair<std::string, bool>> DaemonFlagArities();

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_DAEMON_CONFIG_H_

#include "executor/job_env.h"

#include "common/base/exec_path.h"
#include "common/host/host_files.h"

namespace hpcb::executor {

std::vector<std::string> BuildJobEnv(const host::PasswdFacts& who,
                                     const std::map<std::string, std::string>& forwarded,
                                     std::uint64_t job_id, const std::vector<int>& gpus,
                                     bool machine_has_gpus, const std::string& lang) {
  std::map<std::string, std::string> env;
  env["PATH"] = kCleanPath;
  env["LANG"] = lang.empty() ? "C.UTF-8" : lang;
  for (const auto& [key, value] : forwarded)
    env[key] = value;
  env["HOME"] = who.home;
  env["USER"] = who.user;
  env["LOGNAME"] = who.user;
  env["SHELL"] = who.shell.empty() ? "/bin/sh" : who.shell;
  env["HPC_BATCH_JOB_ID"] = std::to_string(job_id);
  if (machine_has_gpus) {
    env["CUDA_VISIBLE_DEVICES"] = host::FormatIdList(gpus);
  } else {
    env.erase("CUDA_VISIBLE_DEVICES");
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [key, value] : env)
    out.push_back(key + "=" + value);
  return out;
}

std::string_view EndState(protocol::SignalNote note, bool oom,
                          std::optional<std::int64_t> exit_code) {
  if (note != protocol::SignalNote::kNone) return protocol::NameOf(note);
  if (oom) return "oom";
  if (!exit_code) return "error";  // it never ran, or its end went unrecorded
  return exit_code == 0 ? "done" : "failed";
}

}  // namespace hpcb::executor

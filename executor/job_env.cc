#include "executor/job_env.h"

#include "executor/sysfacts.h"

namespace hpcb::executor {

std::vector<std::string> BuildJobEnv(const PasswdFacts& who,
                                     const std::map<std::string, std::string>& forwarded,
                                     std::uint64_t job_id, const std::vector<int>& gpus,
                                     bool machine_has_gpus, const std::string& lang) {
  std::map<std::string, std::string> env;
  env["PATH"] = kCleanPath;
  env["LANG"] = lang.empty() ? "C.UTF-8" : lang;
  for (const auto& [key, value] : forwarded) env[key] = value;
  env["HOME"] = who.home;
  env["USER"] = who.user;
  env["LOGNAME"] = who.user;
  env["SHELL"] = who.shell.empty() ? "/bin/sh" : who.shell;
  env["HPC_BATCH_JOB_ID"] = std::to_string(job_id);
  if (machine_has_gpus) {
    env["CUDA_VISIBLE_DEVICES"] = FormatIdList(gpus);
  } else {
    env.erase("CUDA_VISIBLE_DEVICES");
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [key, value] : env) out.push_back(key + "=" + value);
  return out;
}

std::vector<std::string> ExecCandidates(const std::string& argv0,
                                        const std::string& path_value) {
  if (argv0.find('/') != std::string::npos) return {argv0};
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (;;) {
    std::size_t colon = path_value.find(':', pos);
    std::string dir = path_value.substr(pos, colon == std::string::npos ? std::string::npos
                                                                        : colon - pos);
    if (dir.empty()) dir = ".";
    out.push_back(dir + "/" + argv0);
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  return out;
}

std::optional<std::string> EnvValue(const std::vector<std::string>& env, const std::string& key) {
  for (const auto& entry : env) {
    if (entry.size() > key.size() && entry.compare(0, key.size(), key) == 0 &&
        entry[key.size()] == '=') {
      return entry.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

}  // namespace hpcb::executor

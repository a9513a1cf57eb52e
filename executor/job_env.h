// The environment a job starts with (spec section 7 step 3).
#ifndef HPCB_EXECUTOR_JOB_ENV_H_
#define HPCB_EXECUTOR_JOB_ENV_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hpcb::executor {

struct PasswdFacts {
  std::string user;
  std::string home;
  std::string shell;  // empty -> /bin/sh
};

inline constexpr const char* kCleanPath = "/usr/local/bin:/usr/bin:/bin";

// {PATH, LANG} < forwarded < {HOME, USER, LOGNAME, SHELL} < {HPC_BATCH_JOB_ID,
// CUDA_VISIBLE_DEVICES (only when the machine has GPUs)}. Returns "K=V".
std::vector<std::string> BuildJobEnv(const PasswdFacts& who,
                                     const std::map<std::string, std::string>& forwarded,
                                     std::uint64_t job_id, const std::vector<int>& gpus,
                                     bool machine_has_gpus, const std::string& lang);

// Every full path execve should try for argv0 under `path_value` (the job's
// PATH), in order, like execvp; argv0 with a '/' is used as is.
std::vector<std::string> ExecCandidates(const std::string& argv0,
                                        const std::string& path_value);

// Value of K in a "K=V" list, if present.
std::optional<std::string> EnvValue(const std::vector<std::string>& env, const std::string& key);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_JOB_ENV_H_

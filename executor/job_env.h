// The environment a job starts with (docs/design.md, "A job's environment").
#ifndef HPCB_EXECUTOR_JOB_ENV_H_
#define HPCB_EXECUTOR_JOB_ENV_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/host/accounts.h"

namespace hpcb::executor {

// {PATH, LANG} < forwarded < {HOME, USER, LOGNAME, SHELL} < {HPC_BATCH_JOB_ID,
// CUDA_VISIBLE_DEVICES (only when the machine has GPUs)}. Returns "K=V".
std::vector<std::string> BuildJobEnv(const host::PasswdFacts& who,
                                     const std::map<std::string, std::string>& forwarded,
                                     std::uint64_t job_id, const std::vector<int>& gpus,
                                     bool machine_has_gpus, const std::string& lang);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_JOB_ENV_H_

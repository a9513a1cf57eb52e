// The environment a job starts with (docs/design.md, "A job's environment").
#ifndef HPCB_EXECUTOR_JOB_ENV_H_
#define HPCB_EXECUTOR_JOB_ENV_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/host/accounts.h"
#include "protocol/executor_messages.h"

namespace hpcb::executor {

// {PATH, LANG} < forwarded < {HOME, USER, LOGNAME, SHELL} < {HPC_BATCH_JOB_ID,
// CUDA_VISIBLE_DEVICES (only when the machine has GPUs)}. Returns "K=V".
std::vector<std::string> BuildJobEnv(const host::PasswdFacts& who,
                                     const std::map<std::string, std::string>& forwarded,
                                     std::uint64_t job_id, const std::vector<int>& gpus,
                                     bool machine_has_gpus, const std::string& lang);

// How a job ended, for its --notify command (HPC_BATCH_JOB_STATE), in the
// words of `dispatch list`: why the broker signalled it (timeout, killed),
// else oom, else error (no exit code: it failed to start), done (exit 0)
// or failed.
std::string_view EndState(protocol::SignalNote note, bool oom,
                          std::optional<std::int64_t> exit_code);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_JOB_ENV_H_

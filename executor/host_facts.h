// GPUs as the executor counts them before it is confined.
#ifndef HPCB_EXECUTOR_HOST_FACTS_H_
#define HPCB_EXECUTOR_HOST_FACTS_H_

#include <string>

namespace hpcb::executor {

// Number of "GPU n:" lines of `nvidia_smi -L`; 0 when it cannot run.
// Forks and execs: call before confinement only.
int CountGpus(const std::string& nvidia_smi);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_HOST_FACTS_H_

// Runs one helper program (Slurm's commands, nvidia-smi) with an argv, never a shell:
// its standard input is given text, its output is collected, and it is
// killed once `timeout` passes.
#ifndef HPCB_COMMON_SUBPROCESS_H_
#define HPCB_COMMON_SUBPROCESS_H_

#include <chrono>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace hpcb {

struct ProcessSpec {
  // Run as is when it holds a '/', else looked up on PATH.
  std::string program;
  std::vector<std::string> args;  // after argv[0]
  std::string stdin_text;         // empty: /dev/null
  std::chrono::milliseconds timeout{30'000};
};

struct ProcessOutcome {
  int exit_code = 0;  // meaningful when signal == 0
  int signal = 0;
  std::string out;
  std::string err;
  bool succeeded() const { return signal == 0 && exit_code == 0; }
};

// An Error when the program cannot be started, outlives `timeout` (it is
// killed first) or prints more than 64 MiB; a program that runs and fails
// is an outcome, not an Error.
Result<ProcessOutcome> RunProcess(const ProcessSpec& spec);

}  // namespace hpcb

#endif  // HPCB_COMMON_SUBPROCESS_H_

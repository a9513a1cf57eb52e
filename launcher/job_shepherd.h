// A job's shepherd: the job's parent, forked by the launcher for each job
// (the model is Slurm's slurmstepd). It starts the job child, gives it a
// bounded time to reach execve, tells the launcher how the start went,
// then waits for the job and writes the run record (common/host/
// run_record.h) with its wait status before it exits.
//
// The bargain: one more process per running job (a fork of the launcher,
// asleep in wait4) buys two things. The launcher never waits on a job
// child, which runs as the user from its identity drop on and can be
// stopped by them before it execs. And a job's exit status no longer
// depends on its launcher living as long as it does: the shepherd records
// it durably whoever is around to read it.
#ifndef HPCB_LAUNCHER_JOB_SHEPHERD_H_
#define HPCB_LAUNCHER_JOB_SHEPHERD_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "launcher/job_spawn.h"
#include "protocol/launcher_messages.h"

namespace hpcb::launcher {

// What the shepherd writes to the launcher once: the job's pid and, when
// it did not start, the stage and errno (JobChildReport) or kTimedOutStage.
struct ShepherdReport {
  std::int64_t pid = 0;
  std::int32_t stage = 0;  // 0: the job exec'd
  std::int32_t err = 0;
};
inline constexpr std::int32_t kTimedOutStage = -1;

struct ShepherdChild {
  pid_t pid = -1;
  UniqueFd report;  // read end: one ShepherdReport, then EOF
};

struct ShepherdOptions {
  bool change_identity = true;
  std::string run_dir;  // where the run record goes (root's)
  // How long the job child may take to reach execve before it is killed
  // and the start reported failed.
  std::chrono::milliseconds exec_deadline{10000};
};

// Forks a shepherd for `job`; its report comes on the returned pipe.
Result<ShepherdChild> StartShepherd(const protocol::SpawnRequest& request, const PreparedJob& job,
                                    const SpawnFds& fds, const ShepherdOptions& options);

// The reply text's error for a failed report; "" when the job started.
std::string DescribeShepherdReport(const ShepherdReport& report, const PreparedJob& job,
                                   std::chrono::milliseconds exec_deadline);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_JOB_SHEPHERD_H_

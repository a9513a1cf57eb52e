// The job child: what runs between the shepherd's fork and the job's
// execve (no allocation, no logging): setsid, join the cgroup or set
// affinity, oom_score_adj 0, hide the GPUs it was not given, drop
// identity, chdir, stdio, close every other descriptor, reset signals,
// execve over the job's PATH. A failure travels back through a CLOEXEC
// pipe as a JobChildReport; a successful execve closes the pipe, which is
// how the shepherd learns the job started.
#ifndef HPCB_LAUNCHER_JOB_SPAWN_H_
#define HPCB_LAUNCHER_JOB_SPAWN_H_

#include <sched.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "protocol/launcher_messages.h"

namespace hpcb::launcher {

struct SpawnFds {
  int buffer = -1;      // stdout
  int errors = -1;      // stderr: the same file as `buffer` unless --error
  int cgroup_dir = -1;  // -1: no cgroups (affinity only)
};

// The stage a job child failed at, and its errno.
struct JobChildReport {
  int stage = 0;
  int err = 0;
};

// Where the job child waits for its shepherd's word before it execs.
struct JobHandshake {
  int go_fd = -1;      // one byte arrives once the shepherd recorded the child
  pid_t shepherd = 0;  // the child's parent; it dies with it until then
};

// Everything the child needs, built before fork so the child allocates
// nothing. Trap: argv_ and envp_ point into the strings, where a short
// string keeps its characters, so a PreparedJob never moves: it lives on
// the heap from Build on.
class PreparedJob {
 public:
  // `hide`: device nodes to cover with /dev/null (launcher/gpu_mask.h).
  static Result<std::unique_ptr<PreparedJob>> Build(const protocol::SpawnRequest& request,
                                                    std::vector<std::string> hide = {});
  ~PreparedJob();
  PreparedJob(PreparedJob&&) = delete;
  PreparedJob(const PreparedJob&) = delete;
  PreparedJob& operator=(const PreparedJob&) = delete;
  PreparedJob& operator=(PreparedJob&&) = delete;

  // In the forked child. Never returns: execs the job, or writes a
  // JobChildReport to `report_fd` and exits 127. Every signal goes back
  // to SIG_DFL (launcher/signal_reset.h). It execs only after the
  // handshake's go byte, and exits quietly if the shepherd is gone first.
  [[noreturn]] void Exec(const SpawnFds& fds, int report_fd, bool change_identity,
                         const JobHandshake& handshake) const;

  // "failed to start job: <what>: <strerror>".
  std::string Describe(const JobChildReport& report) const;

 private:
  PreparedJob() = default;
  std::vector<std::string> argv_text_;
  std::vector<std::string> env_text_;
  std::vector<std::string> candidates_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;
  std::vector<gid_t> groups_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  cpu_set_t* mask_ = nullptr;
  size_t mask_size_ = 0;
  std::string cwd_;
  std::vector<std::string> hide_;
};

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_JOB_SPAWN_H_

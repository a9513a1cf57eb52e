// DaemonHarness: a real hpc-batchd in user mode on a scratch directory,
// and a way to run the real `dispatch` against it. As root, the daemon and
// the clients run as a dedicated unprivileged test user (created on
// demand), because the daemon never runs jobs as uid 0. Every process it
// starts is stopped by pid, and every wait is bounded.
#ifndef HPCB_TESTS_E2E_DAEMON_HARNESS_H_
#define HPCB_TESTS_E2E_DAEMON_HARNESS_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace hpcb::e2e {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Defaults: the daemon runs as the test user (user mode). The root tests
// set daemon_as_root, so hpc-batchd runs as root with the real role split.
struct HarnessOptions {
  bool daemon_as_root = false;
  // How long Start waits for the daemon to answer.
  std::chrono::seconds start_timeout{10};
  // NAME=VALUE added to the daemon's environment (inherited by its roles).
  std::vector<std::string> daemon_env;
  // Daemon binary name -> file copied into the scratch bin dir in its
  // place (the launcher starts its roles from its own directory).
  std::map<std::string, std::string> replace_binaries;
  // Extra files copied into the scratch bin dir (mode 0755).
  std::vector<std::string> extra_binaries;
  // The scratch dir in /dev/shm where it can be made, else in /tmp. For a
  // test that writes hundreds of thousands of files: on a disk mounted
  // with `discard` each unlink waits for its own discard, and removing
  // 200k job files afterwards took minutes.
  bool scratch_in_memory = false;
};

class DaemonHarness {
 public:
  DaemonHarness();
  explicit DaemonHarness(HarnessOptions options);
  ~DaemonHarness();
  DaemonHarness(const DaemonHarness&) = delete;
  DaemonHarness& operator=(const DaemonHarness&) = delete;

  // Starts hpc-batchd with the scratch paths plus `extra` flags; returns
  // false (with the log in `log()`) if the socket did not appear.
  bool Start(const std::vector<std::string>& extra = {});
  // Same, but only waits for the socket to appear (no `dispatch list`):
  // for a daemon whose broker is not the real one.
  bool StartNoProbe(const std::vector<std::string>& extra = {});
  // SIGTERM, bounded wait; jobs are left running (that is the contract).
  void Stop();
  // The daemon's exit code if it exits within `timeout` on its own
  // (-1: it did not, or died of a signal); it is reaped either way.
  int WaitForExit(std::chrono::seconds timeout);
  // SIGHUP: the launcher re-execs itself.
  void Reload();
  pid_t daemon_pid() const { return daemon_pid_; }

  // Runs `dispatch args...` from the scratch work dir, as the test user.
  CommandResult Dispatch(const std::vector<std::string>& args,
                         std::chrono::seconds timeout = std::chrono::seconds(20));

  // Runs `binary args...` as `user` (its uid, primary gid and
  // initgroups() supplementary groups; "" = the test user) from `cwd`, with
  // HPC_BATCH_SOCKET set. Only as root for another user.
  CommandResult RunAs(const std::string& user, const std::string& cwd, const std::string& binary,
                      const std::vector<std::string>& args,
                      std::chrono::seconds timeout = std::chrono::seconds(20));
  // `dispatch args...` as `user` from `cwd`.
  CommandResult DispatchAs(const std::string& user, const std::string& cwd,
                           const std::vector<std::string>& args,
                           std::chrono::seconds timeout = std::chrono::seconds(20));

  const std::string& dir() const { return dir_; }
  std::string bin() const { return dir_ + "/bin"; }
  std::string state() const { return dir_ + "/state"; }
  std::string socket() const { return dir_ + "/sock"; }
  // Who the daemon and `dispatch` run as (the test user as root, else us).
  uid_t client_uid() const { return uid_; }
  gid_t client_gid() const { return gid_; }
  std::string work() const { return dir_ + "/work"; }
  std::string log() const;
  std::string ReadWorkFile(const std::string& name) const;

  // Shell text for a job that must still be running (or keep what is
  // behind it queued) when a later step of the test looks: it waits until
  // `name` exists in its working directory, where a `sleep N` could end
  // first on a loaded machine. Bounded at two minutes, so that a test that
  // fails before its release leaves no job behind for long.
  static std::string UntilReleased(const std::string& name = "go");
  // Creates `dir`/`name` (the work dir by default), releasing such a job.
  void Release(const std::string& name = "go", const std::string& dir = "") const;

  // The line of `dispatch list` output whose JOB column (the second) is `id`;
  // "" when there is none.
  static std::string RowOfJob(const std::string& list_text, int id);
  // The id in `dispatch new`'s "job N ..." line; -1 when there is none.
  static int JobIdIn(const std::string& submit_out);
  // The pids the launcher logs once both roles are started.
  static bool RolePids(const std::string& log, pid_t* executor, pid_t* broker);

  // Polls `done` every 50 ms until it holds or `timeout` passes.
  static bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout);

 private:
  CommandResult Run(const std::string& binary, const std::vector<std::string>& args,
                    std::chrono::seconds timeout, bool wait, const std::string& user = "",
                    const std::string& cwd = "");
  bool StartDaemon(const std::vector<std::string>& extra, bool probe);
  HarnessOptions options_;
  std::string dir_;
  uid_t uid_;
  gid_t gid_;
  pid_t daemon_pid_ = -1;
};

}  // namespace hpcb::e2e

#endif  // HPCB_TESTS_E2E_DAEMON_HARNESS_H_

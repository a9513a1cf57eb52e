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
#include <string>
#include <vector>

namespace hpcb::e2e {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class DaemonHarness {
 public:
  DaemonHarness();
  ~DaemonHarness();
  DaemonHarness(const DaemonHarness&) = delete;
  DaemonHarness& operator=(const DaemonHarness&) = delete;

  // Starts hpc-batchd with the scratch paths plus `extra` flags; returns
  // false (with the log in `log()`) if the socket did not appear.
  bool Start(const std::vector<std::string>& extra = {});
  // SIGTERM, bounded wait; jobs are left running (that is the contract).
  void Stop();
  // SIGHUP: the launcher re-execs itself.
  void Reload();
  pid_t daemon_pid() const { return daemon_pid_; }

  // Runs `dispatch args...` from the scratch work dir, as the test user.
  CommandResult Dispatch(const std::vector<std::string>& args,
                         std::chrono::seconds timeout = std::chrono::seconds(20));

  const std::string& dir() const { return dir_; }
  std::string work() const { return dir_ + "/work"; }
  std::string log() const;
  std::string ReadWorkFile(const std::string& name) const;

  // Polls `done` every 50 ms until it holds or `timeout` passes.
  static bool WaitFor(const std::function<bool()>& done,
                      std::chrono::milliseconds timeout);

 private:
  CommandResult Run(const std::string& binary, const std::vector<std::string>& args,
                    std::chrono::seconds timeout, bool wait);
  std::string dir_;
  uid_t uid_;
  gid_t gid_;
  pid_t daemon_pid_ = -1;
};

}  // namespace hpcb::e2e

#endif  // HPCB_TESTS_E2E_DAEMON_HARNESS_H_

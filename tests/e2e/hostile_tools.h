// Tools for the hostile-user e2e suite (hostile_e2e_test.cc): processes
// that run as another uid, the raw-protocol attack loops such a process
// runs, a repeating latency probe, and /proc bookkeeping so that every
// process a test caused can be ended by pid.
//
// The trap: a test forks while probe threads are running. A child of a
// multithreaded process may only make async-signal-safe calls until it
// execs, so RunTimed's child does nothing else, and ForkAs (whose body
// allocates) refuses to fork unless the caller is the only thread.
#ifndef HPCB_TESTS_E2E_HOSTILE_TOOLS_H_
#define HPCB_TESTS_E2E_HOSTILE_TOOLS_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/base/unique_fd.h"
#include "tests/e2e/test_accounts.h"

namespace hpcb::e2e {

// What a child needs to become `who`, resolved before fork.
struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};
Identity IdentityOf(const Account& who);

// setgroups, setresgid, setresuid and a check that they took; async-signal-safe.
bool BecomeUser(const Identity& who);

// Forks a child that becomes `who`, ignores SIGPIPE, dies with the test
// (PR_SET_PDEATHSIG), chdirs to "/" and _exits with body()'s result.
// -1 when it cannot fork, or when the caller is not the process's only
// thread.
pid_t ForkAs(const Account& who, const std::function<int()>& body);

// SIGKILL, then a bounded reap (the pid must be our child).
void KillAndReap(pid_t pid);

struct TimedResult {
  int exit_code = -1;  // 128 + signal when killed
  bool timed_out = false;
  double ms = 0;  // fork to exit
  std::string out;
  std::string err;
};

// Runs argv (argv[0] an absolute path) as `who` from `cwd` with exactly
// `env`; SIGKILLs it after `timeout`. Safe from any thread.
TimedResult RunTimed(const Identity& who, const std::string& cwd,
                     const std::vector<std::string>& argv, const std::vector<std::string>& env,
                     std::chrono::milliseconds timeout);

// A connected unix stream socket, or an invalid fd (a non-blocking
// connect to a full backlog fails with EAGAIN rather than waiting).
UniqueFd ConnectUnix(const std::string& path, bool nonblocking = false);

// Attack loops, run as the attacker inside ForkAs; each runs until killed.

// Keeps `count` connections open, each sent `first_frame` (framed; "" =
// nothing) and never read. A connection the daemon closes is replaced at
// once, or after `retry` when it was closed within a second (refused).
int HoldConnections(const std::string& socket, std::size_t count, const std::string& first_frame,
                    std::chrono::milliseconds retry);

// Sends `request`, then reads the reply `chunk` bytes per `interval`;
// starts over once a whole reply was read. Writes "reply N\n" to
// `report_fd` for each.
int ReadRepliesSlowly(const std::string& socket, const std::string& request, std::size_t chunk,
                      std::chrono::milliseconds interval, int report_fd);

// One connection after another for `duration` (or until `count` were
// answered): sends `request`, reads the reply and writes one line to
// `report_fd`: "id N", "refused MESSAGE", or "broken WHAT" (no reply frame).
int SubmitRepeatedly(const std::string& socket, const std::string& request,
                     std::chrono::milliseconds duration, int report_fd,
                     std::size_t count = SIZE_MAX);

// Scans /proc and SIGSTOPs every process of our uid below `launcher`
// whose comm is not `job_comm`: for a job that never manages to exec,
// that is its child between the switch to our uid and exec. Writes
// "stopped PID COMM\n" to `report_fd` for each.
int StopPreExecChildren(pid_t launcher, const std::string& job_comm, int report_fd);

// Sends `signal` the same way to the processes named `comm` (a helper the
// launcher forked keeps its name, and runs as the user); "stopped PID
// COMM" for SIGSTOP, else "signalled PID COMM".
int SignalChildrenNamed(pid_t launcher, const std::string& comm, int signal, int report_fd);

// /proc/PID/stat, parsed.
struct ProcInfo {
  pid_t pid = 0;
  pid_t ppid = 0;
  char state = '?';
  std::string comm;
  unsigned long long start_ticks = 0;
};
std::optional<ProcInfo> ReadProc(pid_t pid);
std::vector<pid_t> ListPids();
// Exists and is not a zombie.
bool IsLive(pid_t pid);
// Every process below `root` (children, their children, ...), as now.
std::vector<ProcInfo> Descendants(pid_t root);

struct ProbeResult {
  bool ok = false;
  double ms = 0;
};

// Calls `call` every `period` (or at once when a call took longer) on its
// own thread between Start() and Stop(), keeping what each returned.
class RepeatingProbe {
 public:
  RepeatingProbe(std::chrono::milliseconds period, std::function<ProbeResult()> call);
  ~RepeatingProbe();
  RepeatingProbe(const RepeatingProbe&) = delete;
  RepeatingProbe& operator=(const RepeatingProbe&) = delete;

  void Start();
  // Waits for the call in progress.
  void Stop();
  std::vector<double> latencies_ms() const;
  int failures() const;

 private:
  std::chrono::milliseconds period_;
  std::function<ProbeResult()> call_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<double> latencies_ms_;
  int failures_ = 0;
};

// Nearest-rank percentile (q in [0, 1]) of `values`; 0 when empty.
double Percentile(std::vector<double> values, double q);

}  // namespace hpcb::e2e

#endif  // HPCB_TESTS_E2E_HOSTILE_TOOLS_H_

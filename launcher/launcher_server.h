// The launcher's service loop. It takes requests from the executor only
// (spawn a job; deliver output, run a --notify command or empty a
// forgotten job's directory, as a user),
// runs each in a child of its own (a shepherd or a user helper) and answers
// when that child does, so no request waits behind another. It reaps its
// children, reports the end of each shepherd to the executor, and handles
// SIGTERM (stop the roles, leave the jobs) and SIGHUP (stop the roles,
// re-exec in place).
//
// Nothing here waits on anything a user controls: every child has a
// deadline, after which it is killed (it is never reaped before that, so
// its pid cannot have been reused) and its request answered with why.
//
// A role that dies (a crash, a kill -9) is restarted with the other one,
// over fresh channels, while every job runs on: the new executor reads the
// launch specs and run records and takes up where the old one stopped.
// Requests the old executor had in flight are not answered to the new one
// (their children are still reaped); a shepherd among them is a job's
// parent like any other. A role that refuses to start (exit 78), or roles
// that keep dying, end the daemon instead.
#ifndef HPCB_LAUNCHER_LAUNCHER_SERVER_H_
#define HPCB_LAUNCHER_LAUNCHER_SERVER_H_

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "launcher/job_shepherd.h"
#include "launcher/job_spawn.h"
#include "launcher/launcher_setup.h"
#include "protocol/framing.h"
#include "protocol/launcher_messages.h"
#include "protocol/outbox.h"
#include "protocol/root_config.h"

namespace hpcb::launcher {

class LauncherServer {
 public:
  enum class Outcome { kStop, kReload, kRoleDied };

  using RoleStarter = std::function<Result<RoleSet>()>;

  // `as_root`: jobs and deliveries change identity, and each is preceded
  // by a check of PROC_ROOT/sys/fs/suid_dumpable (launcher/dumpable_check.h).
  // `as_user_program`: hpc-batch-as-user, which every user helper execs.
  LauncherServer(protocol::RootConfig config, bool as_root, int signal_fd, int as_user_program,
                 RoleStarter start_roles)
      : config_(std::move(config)),
        as_root_(as_root),
        signal_fd_(signal_fd),
        as_user_program_(as_user_program),
        start_roles_(std::move(start_roles)) {}

  // Starts the roles; false (logged) when they could not be.
  bool StartRoles();

  // Serves until a signal, or roles that cannot be kept running; stops
  // both roles before it returns. Jobs are left running (their shepherds
  // unreaped) in every case.
  Outcome Run();

  // One executor request: answered at once when it cannot start, else when
  // its child answers (from Run, or PollChildren in tests).
  void OnRequest(const protocol::Packet& packet);
  // Reads children's answers, kills those past their deadline, reaps.
  // Returns false when a role died. `wait_ms` bounds the poll.
  bool PollChildren(int wait_ms);

  // After kRoleDied: a role exited 78 (a refusal, e.g. it could not be
  // confined), so the daemon must exit 78 too rather than be restarted.
  bool RoleRefusedToStart() const;

 private:
  // A child working on one request, until it is reaped.
  struct Task {
    protocol::LauncherKind kind = protocol::LauncherKind::kSpawn;
    std::uint64_t req = 0;
    std::uint64_t id = 0;
    UniqueFd answer;  // closed once read to EOF or given up on
    std::string text;
    std::chrono::milliseconds allowed{0};
    std::chrono::steady_clock::time_point deadline;
    bool answered = false;  // the reply has gone to the executor
    bool reaped = false;
    bool orphaned = false;             // its executor died: the answer goes nowhere
    std::int64_t status = 0;           // the wait status, once reaped
    std::unique_ptr<PreparedJob> job;  // spawns: for describing a failure
  };

  // As root, fs.suid_dumpable must not be 1 (launcher/dumpable_check.h).
  Result<void> MayBecomeTheUser() const;
  void StartSpawn(const protocol::SpawnRequest& request, const protocol::Packet& packet);
  void StartDeliver(const protocol::DeliverRequest& request, const protocol::Packet& packet);
  // A user helper (user_helper.h) for `kind` (not a spawn): it runs
  // hpc-batch-as-user with `request` as its command line and `env` as its
  // environment, and has `allowed` to answer; refused with a DeliverReply
  // when it cannot start.
  void StartHelper(std::uint64_t req, std::uint64_t id, protocol::LauncherKind kind,
                   const protocol::UserIdentity& who, std::vector<int> keep,
                   std::chrono::milliseconds allowed, const std::vector<std::string>& request,
                   const std::vector<std::string>& env = {});
  void OnAnswerReadable(pid_t pid, Task& task);
  // The children's answer pipes, added to `fds`; returns whose each is.
  std::vector<pid_t> WatchAnswers(std::vector<struct pollfd>& fds) const;
  // Reads the answers `fds` (one per owner, as WatchAnswers made them) have.
  void ReadAnswers(const struct pollfd* fds, const std::vector<pid_t>& owners);
  // Sends the reply for `task` from what its child said, or `failure`.
  void Answer(pid_t pid, Task& task, const std::optional<Error>& failure);
  void ExpireTasks();
  bool ReapChildren();  // false when a role died
  void Send(const std::string& text);
  void StopRoles();
  // After a role died: both stopped and started again, unless they keep
  // dying or refused to start. False: give up.
  bool RestartRoles();

  protocol::RootConfig config_;
  bool as_root_;
  int signal_fd_;
  int as_user_program_;
  RoleStarter start_roles_;
  UniqueFd executor_fd_;
  // Never blocks (outbox.h): a burst of exits while the executor sends a
  // burst of spawns queues here, and the loop keeps reading.
  protocol::Outbox to_executor_;
  Role executor_;
  Role broker_;
  std::map<pid_t, Task> tasks_;
  std::chrono::steady_clock::time_point roles_started_;
  int quick_deaths_ = 0;
};

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_LAUNCHER_SERVER_H_

// The launcher's service loop: takes spawn / check-destination / deliver
// requests from the executor only, reaps children and reports them, and
// handles SIGTERM (stop roles, leave jobs) and SIGHUP (stop roles, re-exec).
#ifndef HPCB_LAUNCHER_LAUNCHER_SERVER_H_
#define HPCB_LAUNCHER_LAUNCHER_SERVER_H_

#include <string>
#include <vector>

#include "launcher/launcher_setup.h"
#include "protocol/base/result.h"
#include "protocol/base/unique_fd.h"
#include "protocol/framing.h"

namespace hpcb::launcher {

class LauncherServer {
 public:
  enum class Outcome { kStop, kReload, kRoleDied };

  LauncherServer(bool as_root, int executor_fd, int signal_fd, Role executor, Role broker)
      : as_root_(as_root), executor_fd_(executor_fd), signal_fd_(signal_fd),
        executor_(std::move(executor)), broker_(std::move(broker)) {}

  // Serves until a signal or a role's death; stops both roles before it
  // returns. Jobs are left running (and unreaped) in every case.
  Outcome Run();

  // One executor request -> reply text. Public for tests.
  std::string Handle(const protocol::Packet& packet);

  // After kRoleDied: a role exited 78 (a refusal, e.g. it could not be
  // confined), so the daemon must exit 78 too rather than be restarted.
  bool RoleRefusedToStart() const;

 private:
  bool ReapJobs();  // false when a role died
  void StopRoles();

  bool as_root_;
  int executor_fd_;
  int signal_fd_;
  Role executor_;
  Role broker_;
};

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_LAUNCHER_SERVER_H_

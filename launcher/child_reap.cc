#include "launcher/child_reap.h"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <thread>

namespace hpcb::launcher {

Reaped ReapWithin(pid_t pid, std::chrono::milliseconds deadline, std::chrono::milliseconds step) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return Reaped{Reaped::How::kEnded, status};
    if (done < 0 && errno != EINTR) return Reaped{Reaped::How::kNotOurs, 0};
    if (std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(step);
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return Reaped{Reaped::How::kKilled, status};
}

}  // namespace hpcb::launcher

// Job-side probe: shows a job keeps ptrace and perf_event_open (the
// launcher is not confined, so jobs are not either). Prints one line per
// check: "ptrace ok", "perf ok" or "<name> failed <errno>".
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

int main() {
  prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  if (ptrace(PTRACE_ATTACH, child, nullptr, nullptr) == 0) {
    int status = 0;
    waitpid(child, &status, 0);
    ptrace(PTRACE_DETACH, child, nullptr, nullptr);
    std::printf("ptrace ok\n");
  } else {
    std::printf("ptrace failed %d\n", errno);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  struct perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd >= 0) {
    std::printf("perf ok\n");
    close(static_cast<int>(fd));
  } else {
    std::printf("perf failed %d\n", errno);
  }
  std::printf("uid %d gid %d\n", static_cast<int>(getuid()), static_cast<int>(getgid()));
  return 0;
}

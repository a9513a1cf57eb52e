#include "launcher/job_shepherd.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <vector>

#include "common/host/host_files.h"
#include "common/host/run_record.h"
#include "launcher/child_fds.h"
#include "launcher/signal_reset.h"

namespace hpcb::launcher {
namespace {

double Seconds(const struct timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

void Report(int fd, const ShepherdReport& report) {
  // One write of 16 bytes into a pipe is atomic: the launcher reads it whole.
  (void)!::write(fd, &report, sizeof report);
}

// Waits for the job child to exec (its CLOEXEC pipe closes) or to report a
// failure, at most `deadline`. A child that neither does in time was
// stopped or is stuck before exec: it is killed.
ShepherdReport AwaitExec(pid_t job, int exec_pipe, std::chrono::milliseconds deadline) {
  ShepherdReport report;
  report.pid = job;
  const auto until = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    struct pollfd pfd {
      exec_pipe, POLLIN, 0
    };
    int ready = left.count() > 0 ? ::poll(&pfd, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      (void)::kill(job, SIGKILL);
      report.stage = kTimedOutStage;
      return report;
    }
    JobChildReport child;
    ssize_t n = ::read(exec_pipe, &child, sizeof child);
    if (n < 0 && errno == EINTR) continue;
    if (n == static_cast<ssize_t>(sizeof child)) {
      report.stage = child.stage;
      report.err = child.err;
    }
    return report;  // EOF: the job exec'd
  }
}

// The shepherd's life, in a child of the launcher that keeps nothing of
// the launcher's but `fds` and `report_fd`.
[[noreturn]] void RunShepherd(const protocol::SpawnRequest& request, const PreparedJob& job,
                              SpawnFds fds, int report_fd, const ShepherdOptions& options) {
  (void)::prctl(PR_SET_NAME, "hpcb-shepherd", 0, 0, 0);
  // A session of its own: a kill of the daemon's process group (kill -9
  // -PGID; a Ctrl-\ or Ctrl-Z in the terminal that runs it) ends or stops
  // the daemon but not the shepherds, which keep their jobs' exit codes for
  // the next start.
  (void)::setsid();
  // The launcher's blocked signals (its signalfd set) stay blocked here, so
  // a SIGTERM or SIGHUP meant for the service never ends a shepherd.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : kShepherdIgnores)
    (void)::sigaction(sig, &ignore, nullptr);
  std::vector<int> keep{report_fd, fds.buffer, fds.errors, fds.cgroup_dir};
  if (!KeepOnlyFds(keep)) ::_exit(1);
  report_fd = keep[0];
  fds.buffer = keep[1];
  fds.errors = keep[2];
  fds.cgroup_dir = keep[3];

  host::RunRecordWriter run_record(options.run_dir);
  host::RunRecord record;
  record.id = request.id;
  record.shepherd = ::getpid();
  // With its start time a restart tells this shepherd from a process that
  // got its pid after a power cut.
  record.shepherd_start = host::ProcStartTime(::getpid()).value_or(0);
  record.placement = request.placement;
  auto give_up = [&](int err) {
    ::unlink(host::RunRecordPath(options.run_dir, record.id).c_str());
    Report(report_fd, ShepherdReport{0, kTimedOutStage, err});
    ::_exit(1);
  };
  // Before the fork: a launcher that dies from here on leaves a record
  // saying the job may be starting, so no one starts it a second time.
  // Without it, a restart in this window could start the job again.
  if (!run_record.Append(record, host::Sync::kNone)) give_up(EIO);
  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) give_up(errno);
  int go_pipe[2];
  if (::pipe2(go_pipe, O_CLOEXEC) != 0) give_up(errno);
  // A fork, though a clone sharing this memory until the exec would cost
  // less: between its identity drop and its exec the child is the user's,
  // and a clone would hand them root's own memory, guarded only by the
  // dumpable flag (launcher/dumpable_check.h). A clone would also share
  // oom_score_adj and OOM kills with the shepherd, and ASan's per-thread
  // state.
  const pid_t child = ::fork();
  if (child < 0) give_up(errno);
  if (child == 0) {
    ::close(exec_pipe[0]);
    ::close(go_pipe[1]);
    job.Exec(fds, exec_pipe[1], options.change_identity,
             JobHandshake{go_pipe[0], static_cast<pid_t>(record.shepherd)});
  }
  ::close(exec_pipe[1]);
  ::close(go_pipe[0]);
  ::close(fds.buffer);
  ::close(fds.errors);
  if (fds.cgroup_dir >= 0) ::close(fds.cgroup_dir);

  // The child waits for the go byte until its pid is in the record, so
  // whoever reads the record after a crash finds the job either never
  // forked (pid 0, and a child that died with this shepherd) or named
  // here. Written, not flushed: only process deaths race this, and a
  // power cut ends the child too. With the child's start time: a line that
  // reached the disk anyway names the job so that a process given its pid
  // after the boot is not taken for it (unless it started at the same
  // tick since its boot).
  record.pid = child;
  record.pid_start = host::ProcStartTime(child).value_or(0);
  record.start_time = host::EpochNow();
  if (Result<void> noted = run_record.Append(record, host::Sync::kNone); !noted) {
    ::close(go_pipe[1]);           // the child sees EOF and exits without exec'ing
    (void)::kill(child, SIGKILL);  // the user's by now, who may have stopped it
    (void)::waitpid(child, nullptr, 0);
    give_up(EIO);
  }
  (void)!::write(go_pipe[1], "g", 1);  // EPIPE: the child already failed, and says so below
  ::close(go_pipe[1]);
  ShepherdReport report = AwaitExec(child, exec_pipe[0], options.exec_deadline);
  ::close(exec_pipe[0]);
  if (report.stage != 0) {
    // It never ran: no record at all, as for a job never started.
    ::unlink(host::RunRecordPath(options.run_dir, record.id).c_str());
  }
  Report(report_fd, report);
  ::close(report_fd);

  int status = 0;
  struct rusage usage {};
  while (::wait4(child, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  if (report.stage != 0) ::_exit(0);
  record.status = status;
  record.end_time = host::EpochNow();
  record.user_s = Seconds(usage.ru_utime);
  record.system_s = Seconds(usage.ru_stime);
  record.max_rss_kib = usage.ru_maxrss;
  (void)run_record.Append(record, host::Sync::kNow);
  ::_exit(0);
}

}  // namespace

Result<ShepherdChild> StartShepherd(const protocol::SpawnRequest& request, const PreparedJob& job,
                                    const SpawnFds& fds, const ShepherdOptions& options) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno(errno, "fork");
  if (pid == 0) RunShepherd(request, job, fds, write_end.get(), options);
  return ShepherdChild{pid, std::move(read_end)};
}

std::string DescribeShepherdReport(const ShepherdReport& report, const PreparedJob& job,
                                   std::chrono::milliseconds exec_deadline) {
  if (report.stage == 0) return "";
  if (report.stage == kTimedOutStage) {
    if (report.pid == 0) return "failed to start job: the shepherd could not fork";
    return "failed to start job: it did not reach exec within " +
           std::to_string(exec_deadline.count() / 1000) +
           " s (stopped before exec?) and was killed";
  }
  return job.Describe(JobChildReport{report.stage, report.err});
}

}  // namespace hpcb::launcher

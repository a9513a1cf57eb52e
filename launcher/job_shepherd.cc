#include "launcher/job_shepherd.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "launcher/child_fds.h"
#include "protocol/host/host_files.h"
#include "protocol/host/run_record.h"

namespace hpcb::launcher {
namespace {

double EpochNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

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
    // No errno here: the job child shares it until it execs
    // (CloneJobChild). A failed poll or read is retried; the deadline
    // bounds the retries.
    int ready = left.count() > 0 ? ::poll(&pfd, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0) continue;
    if (ready == 0) {
      (void)::kill(job, SIGKILL);
      report.stage = kTimedOutStage;
      return report;
    }
    JobChildReport child;
    ssize_t n = ::read(exec_pipe, &child, sizeof child);
    if (n < 0) continue;
    if (n == static_cast<ssize_t>(sizeof child)) {
      report.stage = child.stage;
      report.err = child.err;
    }
    return report;  // EOF: the job exec'd
  }
}

struct JobChildArgs {
  const PreparedJob* job = nullptr;
  SpawnFds fds;
  int exec_pipe = -1;
  bool change_identity = true;
};

int JobChildMain(void* arg) {
  const auto* args = static_cast<const JobChildArgs*>(arg);
  args->job->Exec(args->fds, args->exec_pipe, args->change_identity);
}

// Starts the job child as a clone that shares the shepherd's memory until
// it execs, as posix_spawn does, but without CLONE_VFORK: the shepherd must
// go on to enforce the exec deadline on a child the user may stop.
//
// The bargain: a fork copied the launcher's page tables and then took a
// copy-on-write fault for every page either side wrote before the exec;
// on the small machines this was measured on, that was a third of the
// root side's CPU per job. The price is two rules while both run in one
// address space:
//   - the child writes nothing the shepherd reads: PreparedJob::Exec makes
//     system calls on memory prepared before the clone and allocates
//     nothing, and runs on a stack of its own;
//   - the shepherd reads no errno until the child has exec'd or died, as
//     errno is one shared word (AwaitExec retries instead).
// `args` must outlive the child's exec: it lives in RunShepherd's frame,
// which never returns. Every signal is blocked across the clone, so that
// no handler copied into the child can run there before Exec resets them.
// The stack (with a guard page under it) is left mapped: after a failure
// or a kill the child may still be on it while the shepherd goes on.
pid_t CloneJobChild(JobChildArgs* args) {
  constexpr std::size_t kStackBytes = std::size_t{128} * 1024;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* area = ::mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (area == MAP_FAILED) return -1;
  if (::mprotect(area, page, PROT_NONE) != 0) {
    const int err = errno;
    ::munmap(area, kStackBytes + page);
    errno = err;
    return -1;
  }
  sigset_t all, before;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &before);
  const pid_t child = ::clone(JobChildMain, static_cast<char*>(area) + page + kStackBytes,
                              CLONE_VM | SIGCHLD, args);
  const int clone_err = errno;
  ::sigprocmask(SIG_SETMASK, &before, nullptr);
  errno = clone_err;
  return child;
}

[[noreturn]] void RunShepherd(const protocol::SpawnRequest& request, const PreparedJob& job,
                              SpawnFds fds, int report_fd, const ShepherdOptions& options) {
  (void)::prctl(PR_SET_NAME, "hpcb-shepherd", 0, 0, 0);
  // The launcher's blocked signals (its signalfd set) stay blocked here, so
  // a SIGTERM or SIGHUP meant for the service never ends a shepherd.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  (void)::sigaction(SIGPIPE, &ignore, nullptr);
  std::vector<int> keep{report_fd, fds.buffer, fds.cgroup_dir};
  if (!KeepOnlyFds(keep)) ::_exit(1);
  report_fd = keep[0];
  fds.buffer = keep[1];
  fds.cgroup_dir = keep[2];

  host::RunRecordWriter run_record(options.run_dir);
  host::RunRecord record;
  record.id = request.id;
  record.shepherd = ::getpid();
  record.placement = request.placement;
  // Before the fork: a launcher that dies from here on leaves a record
  // saying the job may be starting, so no one starts it a second time.
  (void)run_record.Append(record, host::Sync::kNone);
  auto give_up = [&](int err) {
    ::unlink(host::RunRecordPath(options.run_dir, record.id).c_str());
    Report(report_fd, ShepherdReport{0, kTimedOutStage, err});
    ::_exit(1);
  };
  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) give_up(errno);
  JobChildArgs args{&job, fds, exec_pipe[1], options.change_identity};
  const pid_t child = CloneJobChild(&args);
  if (child < 0) give_up(errno);
  ::close(exec_pipe[1]);
  ::close(fds.buffer);
  if (fds.cgroup_dir >= 0) ::close(fds.cgroup_dir);
  ShepherdReport report = AwaitExec(child, exec_pipe[0], options.exec_deadline);
  ::close(exec_pipe[0]);

  record.pid = child;
  record.start_time = EpochNow();
  // Written before the launcher hears of the start: whoever reads the spec
  // after a crash finds the job either unstarted or in this record.
  if (report.stage == 0) {
    (void)run_record.Append(record, host::Sync::kNone);
  } else {
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
  record.end_time = EpochNow();
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

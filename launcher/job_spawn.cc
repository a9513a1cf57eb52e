#include "launcher/job_spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "launcher/exec_path.h"
#include "launcher/user_ops.h"
#include "protocol/base/unique_fd.h"

namespace hpcb::launcher {
namespace {

enum Stage : int {
  kSetsid = 1, kCgroup, kAffinity, kOomScore, kIdentity, kChdir, kStdio, kExec,
};

const char* StageName(int stage) {
  switch (stage) {
    case kSetsid: return "setsid";
    case kCgroup: return "cannot join the job cgroup";
    case kAffinity: return "cannot set cpu affinity";
    case kOomScore: return "cannot reset oom_score_adj";
    case kIdentity: return "cannot switch to the job's user";
    case kChdir: return "cannot enter the working directory";
    case kStdio: return "cannot set up stdio";
    case kExec: return "cannot execute";
    default: return "unknown stage";
  }
}

struct ChildReport {
  int stage;
  int err;
};

[[noreturn]] void Fail(int pipe_fd, int stage, int err) {
  ChildReport report{stage, err};
  (void)!::write(pipe_fd, &report, sizeof report);
  ::_exit(127);
}

// Everything the child needs, built before fork.
struct Prepared {
  std::vector<std::string> candidates;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::vector<gid_t> groups;
  cpu_set_t* mask = nullptr;
  size_t mask_size = 0;
  std::string cwd;
  char pid_text[32] = {0};
};

[[noreturn]] void RunChild(const Prepared& p, const SpawnFds& fds, int report_fd,
                           const protocol::SpawnRequest& req, bool change) {
  if (::setsid() < 0) Fail(report_fd, kSetsid, errno);
  if (fds.cgroup_dir >= 0) {
    int procs = ::openat(fds.cgroup_dir, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (procs < 0) Fail(report_fd, kCgroup, errno);
    if (::write(procs, "0", 1) != 1) Fail(report_fd, kCgroup, errno);
    ::close(procs);
  }
  if (p.mask != nullptr && ::sched_setaffinity(0, p.mask_size, p.mask) != 0) {
    Fail(report_fd, kAffinity, errno);
  }
  int oom = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom >= 0) {
    if (::write(oom, "0", 1) != 1) Fail(report_fd, kOomScore, errno);
    ::close(oom);
  }
  int err = DropIdentity(change, req.who.uid, req.who.gid, p.groups.data(),
                         static_cast<int>(p.groups.size()));
  if (err != 0) Fail(report_fd, kIdentity, err);
  if (::chdir(p.cwd.c_str()) != 0) Fail(report_fd, kChdir, errno);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull < 0 || ::dup2(devnull, 0) < 0) Fail(report_fd, kStdio, errno);
  if (::dup2(fds.buffer, 1) < 0 || ::dup2(fds.buffer, 2) < 0) Fail(report_fd, kStdio, errno);
  // Keep only stdio and the report pipe (CLOEXEC) open.
  int keep = report_fd;
  if (keep > 3) {
    if (::dup2(keep, 3) < 0) Fail(report_fd, kStdio, errno);
    ::fcntl(3, F_SETFD, FD_CLOEXEC);
    keep = 3;
  }
  ::syscall(SYS_close_range, keep == 3 ? 4u : 3u, ~0u, 0u);
  if (keep != 3) ::syscall(SYS_close_range, 4u, ~0u, 0u);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) (void)::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int last = ENOENT;
  for (const auto& candidate : p.candidates) {
    ::execve(candidate.c_str(), p.argv.data(), p.envp.data());
    if (errno != ENOENT && errno != ENOTDIR) last = errno;
    if (errno == ENOEXEC || errno == E2BIG || errno == ENOMEM) break;
  }
  Fail(keep, kExec, last);
}

}  // namespace

Result<pid_t> SpawnJob(const protocol::SpawnRequest& req, const SpawnFds& fds,
                       bool change_identity) {
  if (change_identity && (req.who.uid == 0 || req.who.gid == 0)) {
    return Error(ErrorCode::kPermissionDenied, "refusing to run a job as uid 0 or gid 0");
  }
  Prepared p;
  std::vector<std::string> argv = req.argv;
  std::vector<std::string> env = req.env;
  for (auto& a : argv) p.argv.push_back(a.data());
  p.argv.push_back(nullptr);
  for (auto& e : env) p.envp.push_back(e.data());
  p.envp.push_back(nullptr);
  p.candidates = ExecCandidates(req.argv[0], EnvValue(req.env, "PATH").value_or(protocol::kCleanPath));
  p.groups.assign(req.who.groups.begin(), req.who.groups.end());
  p.cwd = req.cwd;
  int max_cpu = 0;
  for (int cpu : req.cpus) max_cpu = std::max(max_cpu, cpu);
  p.mask = CPU_ALLOC(max_cpu + 1);
  if (p.mask == nullptr) return Error(ErrorCode::kResourceExhausted, "CPU_ALLOC");
  p.mask_size = CPU_ALLOC_SIZE(max_cpu + 1);
  CPU_ZERO_S(p.mask_size, p.mask);
  for (int cpu : req.cpus) CPU_SET_S(static_cast<size_t>(cpu), p.mask_size, p.mask);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    CPU_FREE(p.mask);
    return Error::FromErrno(errno, "pipe2");
  }
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  pid_t pid = ::fork();
  if (pid < 0) {
    CPU_FREE(p.mask);
    return Error::FromErrno(errno, "failed to start job: fork");
  }
  if (pid == 0) RunChild(p, fds, write_end.get(), req, change_identity);
  CPU_FREE(p.mask);
  write_end.reset();
  ChildReport report{};
  ssize_t n;
  do {
    n = ::read(read_end.get(), &report, sizeof report);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof report)) {
    // The child failed before exec and exits 127; leave it for the normal
    // reaper, which reports it to the executor like any other child.
    std::string what = StageName(report.stage);
    if (report.stage == kExec) what += " " + req.argv[0];
    if (report.stage == kChdir) what += " " + req.cwd;
    return Error(ErrorCode::kFailedPrecondition,
                 "failed to start job: " + what + ": " + std::strerror(report.err));
  }
  return pid;
}

}  // namespace hpcb::launcher

#include "launcher/job_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/base/exec_path.h"
#include "launcher/gpu_mask.h"
#include "launcher/signal_reset.h"
#include "launcher/user_ops.h"

namespace hpcb::launcher {
namespace {

enum Stage : int {
  kSetsid = 1,
  kCgroup,
  kAffinity,
  kOomScore,
  kIdentity,
  kChdir,
  kStdio,
  kExec,
  kGpuMask,
};

// Indexed by Stage.
constexpr std::array<const char*, 10> kStageNames = {
    "unknown stage",
    "setsid",
    "cannot join the job cgroup",
    "cannot set cpu affinity",
    "cannot reset oom_score_adj",
    "cannot switch to the job's user",
    "cannot enter the working directory",
    "cannot set up stdio",
    "cannot execute",
    "cannot hide the GPUs it was not given",
};

const char* StageName(int stage) {
  return stage > 0 && stage <= kGpuMask ? kStageNames[stage] : kStageNames[0];
}

[[noreturn]] void Fail(int pipe_fd, int stage, int err) {
  JobChildReport report{stage, err};
  (void)!::write(pipe_fd, &report, sizeof report);
  ::_exit(127);
}

std::vector<char*> Pointers(std::vector<std::string>& texts) {
  std::vector<char*> out;
  out.reserve(texts.size() + 1);
  for (auto& text : texts)
    out.push_back(text.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<std::unique_ptr<PreparedJob>> PreparedJob::Build(const protocol::SpawnRequest& request,
                                                        std::vector<std::string> hide) {
  std::unique_ptr<PreparedJob> p(new PreparedJob());
  p->hide_ = std::move(hide);
  p->argv_text_ = request.argv;
  p->env_text_ = request.env;
  p->argv_ = Pointers(p->argv_text_);
  p->envp_ = Pointers(p->env_text_);
  p->candidates_ =
      ExecCandidates(request.argv[0], EnvValue(request.env, "PATH").value_or(kCleanPath));
  p->groups_.assign(request.who.groups.begin(), request.who.groups.end());
  p->uid_ = request.who.uid;
  p->gid_ = request.who.gid;
  p->cwd_ = request.cwd;
  int max_cpu = 0;
  for (int cpu : request.placement.cpus)
    max_cpu = std::max(max_cpu, cpu);
  p->mask_ = CPU_ALLOC(max_cpu + 1);
  if (p->mask_ == nullptr) return Error(ErrorCode::kResourceExhausted, "CPU_ALLOC");
  p->mask_size_ = CPU_ALLOC_SIZE(max_cpu + 1);
  CPU_ZERO_S(p->mask_size_, p->mask_);
  for (int cpu : request.placement.cpus)
    CPU_SET_S(static_cast<size_t>(cpu), p->mask_size_, p->mask_);
  return p;
}

PreparedJob::~PreparedJob() {
  if (mask_ != nullptr) CPU_FREE(mask_);
}

void PreparedJob::Exec(const SpawnFds& fds, int report_fd, bool change_identity,
                       const JobHandshake& handshake) const {
  if (::setsid() < 0) Fail(report_fd, kSetsid, errno);
  if (fds.cgroup_dir >= 0) {
    int procs = ::openat(fds.cgroup_dir, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (procs < 0) Fail(report_fd, kCgroup, errno);
    if (::write(procs, "0", 1) != 1) Fail(report_fd, kCgroup, errno);
    ::close(procs);
  }
  if (mask_ != nullptr && ::sched_setaffinity(0, mask_size_, mask_) != 0) {
    Fail(report_fd, kAffinity, errno);
  }
  int oom = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom >= 0) {
    if (::write(oom, "0", 1) != 1) Fail(report_fd, kOomScore, errno);
    ::close(oom);
  }
  // Needs CAP_SYS_ADMIN, so while still root.
  if (int hidden = HideNodes(hide_); hidden != 0) Fail(report_fd, kGpuMask, hidden);
  int err =
      DropIdentity(change_identity, uid_, gid_, groups_.data(), static_cast<int>(groups_.size()));
  if (err != 0) Fail(report_fd, kIdentity, err);
  {
    // No exec before the shepherd's run record names this child: a
    // shepherd killed before that leaves a record recovery reads as "never
    // forked", so this child must die with it (the death signal is set
    // after the identity change, which clears it, and the parent checked
    // after setting it, in case it died first). Cleared again before the
    // exec: once recorded, the job outlives a killed shepherd.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != handshake.shepherd) ::_exit(127);
    char go = 0;
    ssize_t got;
    do {
      got = ::read(handshake.go_fd, &go, 1);
    } while (got < 0 && errno == EINTR);
    if (got != 1) ::_exit(127);
    (void)::prctl(PR_SET_PDEATHSIG, 0);
    ::close(handshake.go_fd);
  }
  if (::chdir(cwd_.c_str()) != 0) Fail(report_fd, kChdir, errno);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull < 0 || ::dup2(devnull, 0) < 0) Fail(report_fd, kStdio, errno);
  if (::dup2(fds.buffer, 1) < 0 || ::dup2(fds.errors, 2) < 0) Fail(report_fd, kStdio, errno);
  // Keep only stdio and the report pipe (CLOEXEC, at 3) open.
  int keep = report_fd;
  if (keep != 3) {
    if (::dup3(keep, 3, O_CLOEXEC) < 0) Fail(report_fd, kStdio, errno);
    keep = 3;
  }
  ::syscall(SYS_close_range, 4u, ~0u, 0u);
  ResetAllSignals();
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int last = ENOENT;
  for (const auto& candidate : candidates_) {
    ::execve(candidate.c_str(), argv_.data(), envp_.data());
    if (errno != ENOENT && errno != ENOTDIR) last = errno;
    if (errno == ENOEXEC || errno == E2BIG || errno == ENOMEM) break;
  }
  Fail(keep, kExec, last);
}

std::string PreparedJob::Describe(const JobChildReport& report) const {
  std::string what = StageName(report.stage);
  if (report.stage == kExec) what += " " + argv_text_[0];
  if (report.stage == kChdir) what += " " + cwd_;
  return "failed to start job: " + what + ": " + std::strerror(report.err);
}

}  // namespace hpcb::launcher

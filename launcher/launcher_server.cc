#include "launcher/launcher_server.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/base/log.h"
#include "launcher/dumpable_check.h"
#include "launcher/gpu_mask.h"
#include "launcher/user_helper.h"
#include "launcher/user_ops.h"

namespace hpcb::launcher {
namespace {

using protocol::Decode;
using protocol::Encode;
using protocol::LauncherKind;
using protocol::WireError;
using Clock = std::chrono::steady_clock;

// How long a job child may take to reach execve (job_shepherd.h).
constexpr std::chrono::milliseconds kExecDeadline{10000};
constexpr std::chrono::milliseconds kShepherdSlack{5000};
// A delivery may take this long plus one second per kDeliverBytesPerS.
constexpr std::chrono::milliseconds kDeliverBaseDeadline{60000};
constexpr std::uint64_t kDeliverBytesPerS = 8u << 20;
constexpr std::chrono::milliseconds kCrashLoopUptime{300};
constexpr int kMaxQuickDeaths = 5;
constexpr int kMaxPollMs = 1000;

std::string Seconds(std::chrono::milliseconds ms) {
  return std::to_string((ms.count() + 999) / 1000) + " s";
}

}  // namespace

bool LauncherServer::StartRoles() {
  Result<RoleSet> roles = start_roles_();
  if (!roles) {
    LogError(roles.error().message());
    return false;
  }
  executor_ = roles->executor;
  broker_ = roles->broker;
  executor_fd_ = std::move(roles->executor_channel);
  to_executor_ = protocol::Outbox(executor_fd_.get());
  roles_started_ = std::chrono::steady_clock::now();
  LogInfo("roles started (executor pid " + std::to_string(executor_.pid) + ", broker pid " +
          std::to_string(broker_.pid) + ")");
  return true;
}

bool LauncherServer::RestartRoles() {
  StopRoles();
  executor_fd_.reset();
  to_executor_ = protocol::Outbox();
  if (RoleRefusedToStart()) return false;
  // What the old executor asked is not answered to the new one: its reqs
  // mean nothing there (and a late spawn reply would read as a job started
  // behind its back). The children are still reaped.
  for (auto& [pid, task] : tasks_)
    task.orphaned = true;
  // A spawn in flight must have settled before the new executor reads the
  // records: a job whose start it cannot see yet would be started twice.
  // The shepherd's own deadline bounds this wait.
  const auto settle_by = std::chrono::steady_clock::now() + kExecDeadline + kShepherdSlack;
  auto spawning = [&] {
    return std::any_of(tasks_.begin(), tasks_.end(), [](const auto& entry) {
      return entry.second.kind == LauncherKind::kSpawn && !entry.second.answered;
    });
  };
  while (spawning() && std::chrono::steady_clock::now() < settle_by)
    (void)PollChildren(100);
  // A role killed from outside is restarted however often it happens; one
  // that dies right after every start is crash-looping, and systemd (or
  // whoever runs us) is better placed to decide what to do.
  const auto now = std::chrono::steady_clock::now();
  quick_deaths_ = now - roles_started_ < kCrashLoopUptime ? quick_deaths_ + 1 : 0;
  if (quick_deaths_ >= kMaxQuickDeaths) {
    LogError("the roles died right after starting " + std::to_string(kMaxQuickDeaths) +
             " times in a row; giving up");
    return false;
  }
  LogWarning("restarting the executor and the broker; running jobs are left as they are");
  return StartRoles();
}

void LauncherServer::Send(const std::string& text) {
  Result<void> sent = to_executor_.Send(text);
  if (!sent) LogError("cannot answer the executor: " + sent.error().message());
}

void LauncherServer::OnRequest(const protocol::Packet& packet) {
  Result<protocol::Envelope> envelope = protocol::PeekEnvelope(packet.bytes);
  if (!envelope) {
    LogWarning("refused an executor message: " + envelope.error().message());
    return Send(Encode(protocol::Refused{0, WireError::From(envelope.error())}));
  }
  const std::uint64_t req = envelope->req;
  Result<LauncherKind> kind = protocol::KindOf<LauncherKind>(*envelope);
  if (!kind) {
    LogWarning("refused an executor message: " + kind.error().message());
    return Send(Encode(protocol::Refused{req, WireError::From(kind.error())}));
  }
  switch (*kind) {
    case LauncherKind::kSpawn: {
      // Safe: runs the job as the uid/gid the executor's root-only spec
      // holds, never 0, from a shepherd that bounds the time to exec.
      Result<protocol::SpawnRequest> request = Decode<protocol::SpawnRequest>(packet.bytes);
      if (!request) {
        return Send(Encode(protocol::SpawnReply{
            .req = req,
            .error = WireError::From(request.error().WithContext("failed to start job"))}));
      }
      return StartSpawn(*request, packet);
    }
    case LauncherKind::kDeliver: {
      // Safe: the path is only ever touched by a helper that has become
      // the user, so it can reach nothing the user could not; it writes
      // only a fresh file of the user's own, from a buffer fd the executor
      // opened and checked.
      Result<protocol::DeliverRequest> request = Decode<protocol::DeliverRequest>(packet.bytes);
      if (!request)
        return Send(Encode(protocol::DeliverReply{req, WireError::From(request.error())}));
      return StartDeliver(*request, packet);
    }
    case LauncherKind::kNotify: {
      // Safe: the user's own command (from their submission, which root
      // read itself) runs only in a helper that has become the user; its
      // process group is killed after kNotifySeconds.
      Result<protocol::NotifyRequest> request = Decode<protocol::NotifyRequest>(packet.bytes);
      if (!request)
        return Send(Encode(protocol::DeliverReply{req, WireError::From(request.error())}));
      // The helper kills the command itself; the slack is for a helper
      // that could not (its user stopped it).
      const std::chrono::seconds limit(protocol::kNotifySeconds);
      return StartHelper(
          req, request->id, LauncherKind::kNotify, request->who, {}, limit + kShepherdSlack,
          {"notify", request->cwd, std::to_string(limit.count()), request->command}, request->env);
    }
    case LauncherKind::kEmptyDir: {
      // Safe: root only looks at the descriptor the executor opened; the
      // removal runs in a helper that has become the directory's owner,
      // through that descriptor alone, so it removes nothing that user
      // could not; it is killed after kEmptyDirSeconds.
      Result<protocol::EmptyDirRequest> request = Decode<protocol::EmptyDirRequest>(packet.bytes);
      if (!request)
        return Send(Encode(protocol::DeliverReply{req, WireError::From(request.error())}));
      struct stat dir {};
      if (packet.fds.size() != 1 || ::fstat(packet.fds[0].get(), &dir) != 0 ||
          !S_ISDIR(dir.st_mode) || dir.st_uid != request->who.uid) {
        return Send(Encode(protocol::DeliverReply{
            req, WireError::From(InvalidArgument("empty_dir needs a directory its user owns"))}));
      }
      return StartHelper(req, request->id, LauncherKind::kEmptyDir, request->who,
                         {packet.fds[0].get()}, std::chrono::seconds(protocol::kEmptyDirSeconds),
                         {"empty"});
    }
    case LauncherKind::kSpawnReply:
    case LauncherKind::kDeliverReply:
    case LauncherKind::kChildExited:
    case LauncherKind::kRefused:
      // Kinds only the launcher sends: refused, never acted on.
      LogWarning("refused an executor message of type '" + envelope->type + "'");
      return Send(Encode(protocol::Refused{
          req, WireError::From(InvalidArgument("'" + envelope->type + "' is not a request"))}));
  }
}

// Read before every child that drops to a user (a job child, a delivery): an admin may change the
// setting while the daemon runs.
Result<void> LauncherServer::MayBecomeTheUser() const {
  if (!as_root_) return Ok();
  return CheckSuidDumpable(config_.proc_root);
}

void LauncherServer::StartSpawn(const protocol::SpawnRequest& request,
                                const protocol::Packet& packet) {
  protocol::SpawnReply reply{.req = request.req, .id = request.id};
  auto refuse = [&](const Error& error) {
    reply.error = WireError::From(error.WithContext("failed to start job"));
    Send(Encode(reply));
  };
  if (Result<void> allowed = CheckIdentityAllowed(request.who, as_root_); !allowed) {
    return refuse(allowed.error());
  }
  if (packet.fds.size() < 2 || packet.fds.size() > 3) {
    return refuse(InvalidArgument("spawn needs the stdout and stderr (and cgroup) fds"));
  }
  if (Result<void> safe = MayBecomeTheUser(); !safe) return refuse(safe.error());
  std::vector<std::string> hide;
  if (!config_.no_gpu_mask) {
    const std::vector<int> present = CardNodes(config_.gpu_dev_dir);
    const std::vector<int> missing =
        CardsWithoutNodes(DriverCards(config_.gpu_driver_dir), present);
    if (!missing.empty()) return refuse(MissingNodesError(config_.gpu_dev_dir, missing));
    hide = NodesToHide(config_.gpu_dev_dir, present, request.placement.gpus);
  }
  Result<std::unique_ptr<PreparedJob>> job = PreparedJob::Build(request, std::move(hide));
  if (!job) return refuse(job.error());
  SpawnFds fds;
  fds.buffer = packet.fds[0].get();
  fds.errors = packet.fds[1].get();
  if (packet.fds.size() == 3) fds.cgroup_dir = packet.fds[2].get();
  const ShepherdOptions shepherd_options{.change_identity = as_root_,
                                         .run_dir = config_.state_dir + "/run",
                                         .exec_deadline = kExecDeadline};
  Result<ShepherdChild> shepherd = StartShepherd(request, **job, fds, shepherd_options);
  if (!shepherd) return refuse(shepherd.error());
  const auto allowed = kExecDeadline + kShepherdSlack;
  tasks_.emplace(shepherd->pid, Task{.kind = LauncherKind::kSpawn,
                                     .req = request.req,
                                     .id = request.id,
                                     .answer = std::move(shepherd->report),
                                     .allowed = allowed,
                                     .deadline = Clock::now() + allowed,
                                     .job = std::move(*job)});
}

void LauncherServer::StartDeliver(const protocol::DeliverRequest& request,
                                  const protocol::Packet& packet) {
  struct stat buffer {};
  if (packet.fds.size() != 1 || ::fstat(packet.fds[0].get(), &buffer) != 0 ||
      !S_ISREG(buffer.st_mode)) {
    return Send(Encode(protocol::DeliverReply{
        request.req,
        WireError::From(InvalidArgument("deliver needs the buffer, a regular file"))}));
  }
  // The copy may take as long as the bytes it may copy need, and no longer.
  const std::uint64_t bytes =
      std::min<std::uint64_t>(static_cast<std::uint64_t>(buffer.st_size), request.max_bytes);
  const std::chrono::milliseconds allowed_time =
      kDeliverBaseDeadline + std::chrono::seconds(bytes / kDeliverBytesPerS);
  StartHelper(request.req, request.id, LauncherKind::kDeliver, request.who, {packet.fds[0].get()},
              allowed_time, {"deliver", request.dest, std::to_string(request.max_bytes)});
}

void LauncherServer::StartHelper(std::uint64_t req, std::uint64_t id, LauncherKind kind,
                                 const protocol::UserIdentity& who, std::vector<int> keep,
                                 std::chrono::milliseconds allowed,
                                 const std::vector<std::string>& request,
                                 const std::vector<std::string>& env) {
  auto refuse = [&](const Error& error) {
    Send(Encode(protocol::DeliverReply{req, WireError::From(error)}));
  };
  if (Result<void> allowed_who = CheckIdentityAllowed(who, as_root_); !allowed_who) {
    return refuse(allowed_who.error());
  }
  if (Result<void> safe = MayBecomeTheUser(); !safe) return refuse(safe.error());
  std::vector<std::string> argv{"hpc-batch-as-user"};
  argv.insert(argv.end(), request.begin(), request.end());
  Result<HelperChild> helper =
      StartUserHelper(who, as_root_, std::move(keep), {as_user_program_, argv, env});
  if (!helper) return refuse(helper.error());
  tasks_.emplace(helper->pid, Task{.kind = kind,
                                   .req = req,
                                   .id = id,
                                   .answer = std::move(helper->answer),
                                   .allowed = allowed,
                                   .deadline = Clock::now() + allowed});
}

void LauncherServer::OnAnswerReadable(pid_t pid, Task& task) {
  char buf[4096];
  ssize_t n = ::read(task.answer.get(), buf, sizeof buf);
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return;
    Answer(pid, task, Error::FromErrno(errno, "read the child's answer"));
    return;
  }
  task.text.append(buf, static_cast<std::size_t>(n));
  if (task.text.size() > kMaxHelperAnswer) {
    Answer(pid, task, Error(ErrorCode::kInternal, "the child's answer is too long"));
    return;
  }
  const bool report_whole =
      task.kind == LauncherKind::kSpawn && task.text.size() >= sizeof(ShepherdReport);
  if (n == 0 || report_whole) Answer(pid, task, std::nullopt);
}

void LauncherServer::Answer(pid_t pid, Task& task, const std::optional<Error>& failure) {
  if (task.answered) return;
  task.answered = true;
  task.answer.reset();
  if (task.kind != LauncherKind::kSpawn) {
    Result<void> done = failure ? Result<void>(*failure) : ParseHelperAnswer(task.text);
    if (!task.orphaned) Send(Encode(protocol::DeliverReply{task.req, protocol::ErrorOf(done)}));
    if (task.reaped) tasks_.erase(pid);
    return;
  }
  protocol::SpawnReply reply{.req = task.req, .id = task.id};
  ShepherdReport report;
  if (!failure && task.text.size() >= sizeof report) {
    std::memcpy(&report, task.text.data(), sizeof report);
  }
  if (failure) {
    reply.error = WireError::From(failure->WithContext("failed to start job"));
  } else if (task.text.size() < sizeof report) {
    reply.error = WireError::From(
        Error(ErrorCode::kInternal, "failed to start job: the shepherd died without a report"));
  } else if (report.stage != 0) {
    reply.error = WireError::From(Error(ErrorCode::kFailedPrecondition,
                                        DescribeShepherdReport(report, *task.job, kExecDeadline)));
  } else {
    reply.pid = report.pid;
    reply.shepherd = pid;
  }
  if (!task.orphaned) Send(Encode(reply));
  // Once started, the shepherd is a job's parent: its end is an event for
  // the executor, like any child the launcher does not track.
  const bool started = !reply.error;
  if (started && task.reaped) Send(Encode(protocol::ChildExited{0, pid, task.status}));
  if (started || task.reaped) tasks_.erase(pid);
}

void LauncherServer::ExpireTasks() {
  const auto now = Clock::now();
  std::vector<pid_t> late;
  for (auto& [pid, task] : tasks_) {
    if (!task.answered && now >= task.deadline) late.push_back(pid);
  }
  for (pid_t pid : late) {
    Task& task = tasks_.at(pid);
    // Not reaped yet, so the pid is still this child's.
    if (!task.reaped) (void)::kill(pid, SIGKILL);
    const char* what = task.kind == LauncherKind::kSpawn     ? "starting the job"
                       : task.kind == LauncherKind::kDeliver ? "delivering the output"
                       : task.kind == LauncherKind::kNotify  ? "running the --notify command"
                                                             : "emptying the directory";
    LogWarning(std::string(what) + " for job " + std::to_string(task.id) +
               " timed out; its child (pid " + std::to_string(pid) + ") was killed");
    Answer(pid, task,
           Error(ErrorCode::kUnavailable,
                 std::string(what) + " timed out after " + Seconds(task.allowed)));
  }
}

bool LauncherServer::ReapChildren() {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return true;
    for (Role* role : {&executor_, &broker_}) {
      if (pid == role->pid) {
        LogError(role->name + " (pid " + std::to_string(pid) + ") exited with status " +
                 std::to_string(status));
        role->wait_status = status;
        role->pid = -1;
        return false;
      }
    }
    auto it = tasks_.find(pid);
    if (it == tasks_.end()) {
      Send(Encode(protocol::ChildExited{0, pid, status}));
      continue;
    }
    it->second.reaped = true;
    it->second.status = status;
    if (it->second.answered) tasks_.erase(it);
  }
}

bool LauncherServer::RoleRefusedToStart() const {
  for (const Role* role : {&executor_, &broker_}) {
    if (role->wait_status >= 0 && WIFEXITED(role->wait_status) &&
        WEXITSTATUS(role->wait_status) == protocol::kExitConfig) {
      return true;
    }
  }
  return false;
}

void LauncherServer::StopRoles() {
  StopRole(broker_);
  StopRole(executor_);
}

std::vector<pid_t> LauncherServer::WatchAnswers(std::vector<struct pollfd>& fds) const {
  std::vector<pid_t> owners;
  for (const auto& [pid, task] : tasks_) {
    if (!task.answer.valid()) continue;
    fds.push_back({task.answer.get(), POLLIN, 0});
    owners.push_back(pid);
  }
  return owners;
}

void LauncherServer::ReadAnswers(const struct pollfd* fds, const std::vector<pid_t>& owners) {
  for (std::size_t i = 0; i < owners.size(); ++i) {
    if (fds[i].revents == 0) continue;
    auto it = tasks_.find(owners[i]);
    if (it != tasks_.end() && !it->second.answered) OnAnswerReadable(owners[i], it->second);
  }
}

bool LauncherServer::PollChildren(int wait_ms) {
  std::vector<struct pollfd> fds;
  const std::vector<pid_t> owners = WatchAnswers(fds);
  if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) return true;
  ReadAnswers(fds.data(), owners);
  ExpireTasks();
  return ReapChildren();
}

LauncherServer::Outcome LauncherServer::Run() {
  for (;;) {
    // Back-pressure: past the outbox's mark no new request is read; the
    // executor always reads us, so the outbox drains.
    const short executor_events = static_cast<short>((to_executor_.over_high_water() ? 0 : POLLIN) |
                                                     (to_executor_.wants_write() ? POLLOUT : 0));
    std::vector<struct pollfd> fds{{signal_fd_, POLLIN, 0},
                                   {executor_fd_.get(), executor_events, 0}};
    const std::vector<pid_t> owners = WatchAnswers(fds);
    auto wake = Clock::now() + std::chrono::milliseconds(kMaxPollMs);
    for (const auto& [pid, task] : tasks_) {
      if (!task.answered) wake = std::min(wake, task.deadline);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now());
    const int ready =
        ::poll(fds.data(), fds.size(), std::max<int>(0, static_cast<int>(wait.count())));
    if (ready < 0 && errno != EINTR) {
      LogError(std::string("poll failed: ") + std::strerror(errno));
      StopRoles();
      return Outcome::kStop;
    }
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo info {};
      if (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT) {
          LogInfo("shutting down; running jobs are left untouched");
          StopRoles();
          return Outcome::kStop;
        }
        if (info.ssi_signo == SIGHUP) {
          LogInfo("reloading: re-exec; running jobs are preserved");
          StopRoles();
          return Outcome::kReload;
        }
      }
    }
    // Children first: an answer read now goes out before a later request.
    ReadAnswers(fds.data() + 2, owners);
    if ((fds[1].revents & (POLLOUT | POLLHUP | POLLERR)) && to_executor_.wants_write()) {
      if (Result<void> flushed = to_executor_.Flush(); !flushed) {
        LogError("cannot answer the executor: " + flushed.error().message());
      }
    }
    if (to_executor_.over_high_water()) fds[1].revents = 0;
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      Result<protocol::Packet> packet = protocol::ReceiveMessage(executor_fd_.get());
      if (!packet) {
        if (packet.error().code() == ErrorCode::kUnavailable) {
          LogError("the executor went away");
          if (!RestartRoles()) return Outcome::kRoleDied;
          continue;
        }
        LogWarning("bad executor message: " + packet.error().message());
        Send(Encode(protocol::Refused{0, WireError::From(packet.error())}));
      } else {
        OnRequest(*packet);
      }
    }
    ExpireTasks();
    if (!ReapChildren() && !RestartRoles()) return Outcome::kRoleDied;
  }
}

}  // namespace hpcb::launcher

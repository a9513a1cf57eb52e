#include "executor/executor_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/base/log.h"
#include "common/host/host_files.h"

namespace hpcb::executor {
namespace {

using protocol::Decode;
using protocol::Encode;
using protocol::ExecutorKind;
using protocol::SpecState;
using protocol::WireError;

constexpr int kMaxPollMs = 1000;
constexpr int kMaxPerTurn = 64;

// The poll events `fd` has right now (0: nothing to read), without waiting.
short Readable(int fd) {
  struct pollfd one = {fd, POLLIN, 0};
  return ::poll(&one, 1, 0) > 0 ? one.revents : static_cast<short>(0);
}

std::string JobText(std::uint64_t id) {
  return "job " + std::to_string(id);
}

}  // namespace

std::int64_t ExitCodeFromStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

ExecutorServer::ExecutorServer(protocol::RootConfig config, ExecutorFacts facts, int launcher_fd,
                               int broker_fd)
    : config_(std::move(config)),
      facts_(std::move(facts)),
      launcher_fd_(launcher_fd),
      broker_fd_(broker_fd) {}

void ExecutorServer::SendToBroker(const std::string& text, const std::vector<int>& fds) {
  HeldAnswer answer{text, {}};
  for (int fd : fds) {
    if (!answer.fds.emplace_back(::fcntl(fd, F_DUPFD_CLOEXEC, 0)).valid()) {
      Error error = Error::FromErrno(errno, "dup a descriptor for the broker");
      return LogError("cannot answer the broker: " + error.message());
    }
  }
  held_answers_.push_back(std::move(answer));
}

Result<void> ExecutorServer::EndTurn() {
  HPCB_TRY(store_.Commit());
  for (const HeldAnswer& answer : held_answers_) {
    std::vector<int> fds;
    for (const UniqueFd& fd : answer.fds)
      fds.push_back(fd.get());
    Result<void> sent = to_broker_.Send(answer.text, fds);
    if (!sent) LogError("cannot reach the broker: " + sent.error().message());
  }
  held_answers_.clear();
  return Ok();
}

void ExecutorServer::Refuse(std::uint64_t req, std::uint64_t id, const std::string& what,
                            const Error& error) {
  LogWarning("refused " + what + ": " + error.message());
  SendToBroker(Encode(protocol::Ack{req, id, WireError::From(error)}));
}

bool ExecutorServer::StateDirNearlyFull() const {
  // 4 MiB, or a sixteenth of a small filesystem (an 8 MiB tmpfs keeps
  // 512 KiB), so that such a state directory can start anything at all.
  constexpr std::uint64_t kRoomNeeded = 4u << 20;
  struct statvfs fs {};
  if (::statvfs(config_.state_dir.c_str(), &fs) != 0) return false;
  const std::uint64_t size = static_cast<std::uint64_t>(fs.f_blocks) * fs.f_frsize;
  return static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize < std::min(kRoomNeeded, size / 16);
}

JobPhase ExecutorServer::PhaseOf(std::uint64_t id) const {
  if (auto step = in_flight_.find(id); step != in_flight_.end()) return step->second;
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return JobPhase::kUnknown;
  switch (it->second.state) {
    case SpecState::kRegistered:
      return JobPhase::kQueued;
    case SpecState::kRunning:
      return JobPhase::kRunning;
    case SpecState::kExited:
      return JobPhase::kEnded;
  }
  return JobPhase::kUnknown;
}

void ExecutorServer::Handle(const protocol::Packet& packet) {
  Result<protocol::Envelope> envelope = protocol::PeekEnvelope(packet.bytes);
  if (!envelope) return Refuse(0, 0, "a broker message", envelope.error());
  const std::uint64_t req = envelope->req;
  Result<ExecutorKind> kind = protocol::KindOf<ExecutorKind>(*envelope);
  if (!kind) return Refuse(req, 0, "a broker message", kind.error());
  if (*kind != ExecutorKind::kRegister && *kind != ExecutorKind::kDeliverAgain &&
      !packet.fds.empty()) {
    return Refuse(req, 0, envelope->type, InvalidArgument("unexpected file descriptors"));
  }
  if (*kind != ExecutorKind::kHello && !greeted_) {
    return Refuse(req, 0, envelope->type, Error(ErrorCode::kFailedPrecondition, "hello first"));
  }
  switch (*kind) {
    case ExecutorKind::kHello:
      // Safe: reads nothing the broker sent but its version.
      return OnHello(req, packet.bytes);
    case ExecutorKind::kListJobs:
      // Safe: ids and states of our own records, bounded per page.
      return OnListJobs(req, packet.bytes);
    case ExecutorKind::kRegister:
      // Safe: identity from SO_PEERCRED, what runs from the client's own
      // frame; its output path is checked as the user by dispatch and
      // again by the delivery.
      return OnRegister(req, packet);
    case ExecutorKind::kStart:
      // Safe: runs only a registered spec, on ids checked against the
      // machine, as the spec's (non-root) user.
      return OnStart(req, packet.bytes);
    case ExecutorKind::kSignal:
      // Safe: only a running job's own process group and cgroup.
      return OnSignal(req, packet.bytes);
    case ExecutorKind::kForget:
      // Safe: removes a finished job's own files, never following a link.
      return OnForget(req, packet.bytes);
    case ExecutorKind::kOpenOutput:
      // Safe: a read-only fd of a checked regular file; the broker checks
      // who may read it before asking.
      return OnOpenOutput(req, packet.bytes);
    case ExecutorKind::kDeliverAgain:
      // Safe: the copy is made by a helper that has become the job's owner,
      // to the old place or to one the owner's own frame names.
      return OnDeliverAgain(req, packet);
    case ExecutorKind::kHelloReply:
    case ExecutorKind::kListJobsReply:
    case ExecutorKind::kOutputReply:
    case ExecutorKind::kRegisterReply:
    case ExecutorKind::kStartReply:
    case ExecutorKind::kAck:
    case ExecutorKind::kExited:
      // Kinds only the executor sends: refused, never acted on.
      return Refuse(req, 0, envelope->type,
                    InvalidArgument("'" + envelope->type + "' is not a request"));
  }
}

void ExecutorServer::OnHello(std::uint64_t req, const std::string& text) {
  Result<protocol::Hello> hello = Decode<protocol::Hello>(text);
  if (!hello) return Refuse(req, 0, "hello", hello.error());
  greeted_ = true;
  facts_.gpu_count = static_cast<int>(hello->gpu_count);
  SendToBroker(
      Encode(protocol::HelloReply{.req = req, .jobs = jobs_.size(), .next_id = high_water_ + 1}));
}

void ExecutorServer::OnListJobs(std::uint64_t req, const std::string& text) {
  Result<protocol::ListJobs> request = Decode<protocol::ListJobs>(text);
  if (!request) return Refuse(req, 0, "list_jobs", request.error());
  protocol::ListJobsReply reply{.req = req};
  std::size_t bytes = 0;
  for (auto it = jobs_.upper_bound(request->after); it != jobs_.end(); ++it) {
    if (reply.jobs.size() == request->limit || bytes > protocol::ListJobs::kMaxPageBytes) {
      reply.more = true;
      break;
    }
    // A job that ended while we were away is listed as running until its
    // Finish (after hello) has read its exit and sent JobExited: listed as
    // exited now, it would reach the broker without its exit code.
    protocol::JobSummary summary = it->second;  // never the rest of the spec
    summary.who.groups.clear();  // the broker has no use for them; a page stays small
    bytes += protocol::Encode(summary).size();
    reply.jobs.push_back(std::move(summary));
  }
  SendToBroker(Encode(reply));
}

void ExecutorServer::OnSignal(std::uint64_t req, const std::string& text) {
  Result<protocol::SignalJob> request = Decode<protocol::SignalJob>(text);
  if (!request) return Refuse(req, 0, "signal", request.error());
  const std::uint64_t id = request->id;
  if (Result<void> allowed = CheckPhase(JobOperation::kSignal, PhaseOf(id), id); !allowed) {
    return Refuse(req, id, "signal to " + JobText(id), allowed.error());
  }
  const LaunchSpec& spec = jobs_.at(id);
  Result<std::uint64_t> start = host::ProcStartTime(static_cast<int>(spec.pid));
  if (!start || *start != spec.proc_start || spec.pid <= 1) {
    return Refuse(req, id, "signal to " + JobText(id),
                  Error(ErrorCode::kNotFound, "the process of " + JobText(id) + " is gone"));
  }
  if (request->note == protocol::SignalNote::kTimeout) {
    AppendLine(spec, "hpc-batch: job exceeded its time limit (" + std::to_string(request->limit_s) +
                         "s); killing");
  }
  const int sig = request->signal == protocol::SignalKind::kKill ? SIGKILL : SIGTERM;
  if (sig == SIGKILL) (void)cgroups_.Kill(id);
  if (::kill(-static_cast<pid_t>(spec.pid), sig) != 0 && errno != ESRCH) {
    return Refuse(req, id, "signal to " + JobText(id), Error::FromErrno(errno, "kill"));
  }
  if (request->note != protocol::SignalNote::kNone) signalled_[id] = request->note;
  SendToBroker(Encode(protocol::Ack{req, id, std::nullopt}));
}

void ExecutorServer::OnForget(std::uint64_t req, const std::string& text) {
  Result<protocol::ForgetJob> request = Decode<protocol::ForgetJob>(text);
  if (!request) return Refuse(req, 0, "forget", request.error());
  const std::uint64_t id = request->id;
  if (Result<void> allowed = CheckPhase(JobOperation::kForget, PhaseOf(id), id); !allowed) {
    return Refuse(req, id, "forget", allowed.error());
  }
  auto it = jobs_.find(id);
  if (id >= high_water_) {
    // The spec that held the highest id goes: its id must outlive it.
    high_water_ = id;
    if (Result<void> kept =
            host::WriteFileAtomic(high_water_path(), std::to_string(id) + "\n", 0600);
        !kept) {
      LogError("cannot record the highest job id: " + kept.error().message());
    }
  }
  if (Result<void> forgotten = store_.Forget(id); !forgotten) {
    // Its spec would come back with a restart: the job is kept whole (its
    // files too) and the broker told.
    return Refuse(req, id, "forget", forgotten.error());
  }
  // The tree is the user's: root removes only what it made; what the user
  // added is removed as the user, after the answer.
  DropJobDir(id, it->second.who);
  if (!config_.no_dev_dir) ::unlink((config_.dev_dir + "/jobs/" + std::to_string(id)).c_str());
  ::unlink(host::RunRecordPath(run_dir(), id).c_str());
  usage_.Remove(id);
  never_saved_.erase(id);
  jobs_.erase(it);
  SendToBroker(Encode(protocol::Ack{req, id, std::nullopt}));
}

void ExecutorServer::OnOpenOutput(std::uint64_t req, const std::string& text) {
  Result<protocol::OpenOutput> request = Decode<protocol::OpenOutput>(text);
  if (!request) return Refuse(req, 0, "open_output", request.error());
  const std::uint64_t id = request->id;
  if (Result<void> allowed = CheckPhase(JobOperation::kOpenOutput, PhaseOf(id), id); !allowed) {
    return Refuse(req, id, "open_output", allowed.error());
  }
  Result<UniqueFd> fd = OpenBuffer(jobs_.at(id), O_RDONLY);
  if (!fd) return Refuse(req, request->id, "open_output", fd.error());
  SendToBroker(Encode(protocol::Ack{req, request->id, std::nullopt}), {fd->get()});
}

void ExecutorServer::OnLauncherMessage(const protocol::Packet& packet) {
  Result<protocol::Envelope> envelope = protocol::PeekEnvelope(packet.bytes);
  if (!envelope) {
    LogWarning("dropped a launcher message: " + envelope.error().message());
    return;
  }
  if (envelope->req != 0) {
    if (!launcher_calls_.Complete(envelope->req, protocol::Packet{packet.bytes, {}})) {
      LogWarning("dropped a launcher reply to req " + std::to_string(envelope->req) +
                 ", which no longer waits (it timed out)");
      // A job started after we gave up on it runs unrecorded: stop it.
      Result<protocol::SpawnReply> late = Decode<protocol::SpawnReply>(packet.bytes);
      if (late && !late->error && late->pid > 1) {
        LogWarning("killing job " + std::to_string(late->id) + " (pid " +
                   std::to_string(late->pid) + "), which started after its start timed out");
        (void)::kill(-static_cast<pid_t>(late->pid), SIGKILL);
        (void)cgroups_.Kill(late->id);
      }
    }
    return;
  }
  if (!greeted_) {
    launcher_events_.push_back(protocol::Packet{packet.bytes, {}});
    return;
  }
  Result<protocol::ChildExited> event = Decode<protocol::ChildExited>(packet.bytes);
  if (!event) {
    LogWarning("bad launcher event: " + event.error().message());
    return;
  }
  OnChildExited(*event);
}

void ExecutorServer::Tick() {
  launcher_calls_.ExpireOverdue();
  RetryCgroupRemovals();
  if (!greeted_) return;
  std::vector<protocol::Packet> held;
  held.swap(launcher_events_);
  for (const protocol::Packet& event : held)
    OnLauncherMessage(event);
  if (!dead_on_arrival_.empty()) {
    std::vector<std::uint64_t> dead;
    dead.swap(dead_on_arrival_);
    for (std::uint64_t id : dead) {
      LogInfo(JobText(id) + " ended while the daemon was away");
      Finish(id);
    }
  }
  PollForeign();
}

Result<void> ExecutorServer::CompleteRecovery() {
  // Groups a crash left behind; running (adopted or dead-on-arrival) jobs
  // keep theirs: Finish still reads memory.events there.
  std::set<std::uint64_t> keep;
  for (const auto& [id, spec] : jobs_) {
    if (spec.state == SpecState::kRunning) keep.insert(id);
  }
  for (std::uint64_t id : cgroups_.PruneEmpty(keep)) {
    LogInfo("removed the leftover empty cgroup of " + JobText(id));
  }
  // What recovery saved and said, flushed before anything else is read.
  return EndTurn();
}

Result<void> ExecutorServer::Run() {
  if (recovery_error_) return *recovery_error_;
  if (specs_loaded_) HPCB_TRY(CompleteRecovery());
  auto last_tick = std::chrono::steady_clock::now();
  for (;;) {
    int wait_ms = kMaxPollMs;
    if (std::optional<std::chrono::steady_clock::time_point> next =
            launcher_calls_.NextDeadline()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *next - std::chrono::steady_clock::now());
      wait_ms = std::clamp<int>(static_cast<int>(left.count()) + 1, 0, kMaxPollMs);
    }
    constexpr int kSettlePollMs = 50;
    if (!specs_loaded_) wait_ms = std::min(wait_ms, kSettlePollMs);
    // Back-pressure: while either outbox is over its mark no new request
    // is read from the broker (which always reads us, so ours drains);
    // the launcher is always read, so its outbox to us drains too.
    const bool take_requests =
        specs_loaded_ && !to_broker_.over_high_water() && !to_launcher_.over_high_water();
    // Not reading the broker and nothing for it: left out of the poll, or a
    // broker that hung up would wake every turn.
    const bool watch_broker = take_requests || to_broker_.wants_write();
    struct pollfd fds[2] = {
        {watch_broker ? broker_fd_ : -1,
         static_cast<short>((take_requests ? POLLIN : 0) |
                            (to_broker_.wants_write() ? POLLOUT : 0)),
         0},
        {launcher_fd_, static_cast<short>(POLLIN | (to_launcher_.wants_write() ? POLLOUT : 0)), 0}};
    int ready = ::poll(fds, 2, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "poll");
    }
    // A peer that hung up fails the flush (EPIPE), whatever poll reported.
    constexpr short kWritableOrGone = POLLOUT | POLLHUP | POLLERR;
    if ((fds[1].revents & kWritableOrGone) && to_launcher_.wants_write()) {
      if (Result<void> flushed = to_launcher_.Flush(); !flushed) {
        LogWarning("cannot reach the launcher: " + flushed.error().message());
      }
    }
    if ((fds[0].revents & kWritableOrGone) && to_broker_.wants_write()) {
      if (Result<void> flushed = to_broker_.Flush(); !flushed) {
        LogInfo("broker went away (" + flushed.error().message() + "); stopping");
        return store_.Commit();
      }
    }
    if (!take_requests) fds[0].revents = 0;
    // A turn takes what is waiting on both sockets, up to kMaxPerTurn
    // messages each (so neither side starves the other), and its answers
    // share one flush (EndTurn).
    for (int taken = 0; taken < kMaxPerTurn && (fds[1].revents & (POLLIN | POLLHUP | POLLERR));
         ++taken) {
      Result<protocol::Packet> packet = protocol::ReceiveMessage(launcher_fd_);
      if (!packet) {
        if (packet.error().code() == ErrorCode::kUnavailable) {
          launcher_calls_.FailAll(Error(ErrorCode::kUnavailable, "the launcher went away"));
          HPCB_TRY(EndTurn());
          return packet.error().WithContext("launcher");
        }
        LogWarning("refused a launcher message: " + packet.error().message());
      } else {
        OnLauncherMessage(*packet);
      }
      fds[1].revents = Readable(launcher_fd_);
    }
    for (int taken = 0; taken < kMaxPerTurn && (fds[0].revents & (POLLIN | POLLHUP | POLLERR));
         ++taken) {
      Result<protocol::Packet> packet = protocol::ReceiveMessage(broker_fd_);
      if (!packet) {
        if (packet.error().code() == ErrorCode::kUnavailable) {
          LogInfo("broker went away; stopping");
          return EndTurn();
        }
        Refuse(0, 0, "a broker message", packet.error());
      } else {
        Handle(*packet);
      }
      fds[0].revents = Readable(broker_fd_);
    }
    if (!specs_loaded_) {
      HPCB_TRY(SettleStep());
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    launcher_calls_.ExpireOverdue(now);
    // A poll that timed out (not one that only looked: a deadline past).
    if (now - last_tick >= std::chrono::milliseconds(kMaxPollMs) || (ready == 0 && wait_ms > 0)) {
      Tick();
      last_tick = now;
    }
    if (Result<void> ended = EndTurn(); !ended) {
      return ended.error().WithContext(
          "cannot make the state directory durable; stopping "
          "rather than acknowledge what may not be on disk");
    }
  }
}

}  // namespace hpcb::executor

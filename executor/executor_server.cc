#include "executor/executor_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <filesystem>

#include "executor/host_facts.h"
#include "executor/job_cgroup.h"
#include "executor/job_env.h"
#include "executor/sysfacts.h"
#include "protocol/host/accounts.h"
#include "protocol/host/host_files.h"
#include "protocol/base/log.h"
#include "protocol/client_messages.h"
#include "protocol/queued_frame.h"

namespace hpcb::executor {
namespace {

using protocol::Decode;
using protocol::Encode;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string AckText(std::uint64_t id, const std::optional<std::string>& error) {
  protocol::Ack ack;
  ack.id = id;
  ack.error = error;
  return Encode(ack);
}

std::string Refuse(std::uint64_t id, const std::string& what, const Error& error) {
  LogWarning("refused " + what + ": " + error.message());
  return AckText(id, error.message());
}

// The job info readable by the user and the admin group (never the env).
struct JobInfo {
  const LaunchSpec* spec;
  template <class A> void save(A& ar) const {
    using protocol::Put;
    Put(ar, "id", spec->id); Put(ar, "user", spec->who.user); Put(ar, "uid", spec->who.uid);
    Put(ar, "gid", spec->who.gid); Put(ar, "argv", spec->argv); Put(ar, "cwd", spec->cwd);
    Put(ar, "state", spec->state); Put(ar, "pid", spec->pid);
    Put(ar, "start_time", spec->start_time); Put(ar, "output_dest", spec->output_dest);
  }
};

}  // namespace

std::int64_t ExitCodeFromStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

ExecutorServer::ExecutorServer(protocol::DaemonConfig config, ExecutorFacts facts,
                               int launcher_fd, int broker_fd)
    : config_(std::move(config)), facts_(std::move(facts)), launcher_fd_(launcher_fd),
      broker_fd_(broker_fd) {}

void ExecutorServer::Recover() {
  for (std::uint64_t id : ListSpecs(specs_dir())) {
    auto spec = LoadSpec(specs_dir(), id);
    if (!spec) {
      LogWarning("ignoring unreadable spec " + std::to_string(id) + ": " + spec.error().message());
      continue;
    }
    if (spec->state == "running") {
      auto start = host::ProcStartTime(static_cast<int>(spec->pid), facts_.proc_root);
      if (start && *start == spec->proc_start) {
        auto ppid_text = host::ReadSmallFile(facts_.proc_root + "/" + std::to_string(spec->pid) + "/stat");
        bool ours = false;
        if (ppid_text) {
          auto close = ppid_text->rfind(')');
          if (close != std::string::npos) {
            std::istringstream in(ppid_text->substr(close + 2));
            std::string state_char;
            long ppid = 0;
            in >> state_char >> ppid;
            ours = ppid == ::getppid();
          }
        }
        if (!ours) foreign_.insert(id);
        LogInfo("adopted running job " + std::to_string(id) + " (pid " +
                std::to_string(spec->pid) + ", user " + spec->who.user + ")");
      } else {
        dead_on_arrival_.push_back(id);
      }
    }
    jobs_[id] = std::move(*spec);
  }
}

void ExecutorServer::SendToBroker(const std::string& text) {
  auto sent = protocol::SendMessage(broker_fd_, text);
  if (!sent) LogError("cannot reach the broker: " + sent.error().message());
}

Result<protocol::Packet> ExecutorServer::AskLauncher(const std::string& text,
                                                     const std::vector<int>& fds) {
  HPCB_TRY(protocol::SendMessage(launcher_fd_, text, fds));
  for (;;) {
    HPCB_ASSIGN_OR_RETURN(protocol::Packet packet, protocol::ReceiveMessage(launcher_fd_));
    auto type = protocol::PeekTag(packet.bytes, "type");
    if (type && *type == "child_exited") {
      launcher_events_.push_back(packet.bytes);
      continue;
    }
    return packet;
  }
}

ExecutorServer::Reply ExecutorServer::Handle(const protocol::Packet& packet) {
  Reply reply;
  auto type = protocol::PeekTag(packet.bytes, "type");
  if (!type) {
    reply.text = Refuse(0, "a message without a type", type.error());
    return reply;
  }
  if (*type != "register" && !packet.fds.empty()) {
    reply.text = Refuse(0, *type, InvalidArgument("unexpected file descriptors"));
    return reply;
  }
  if (*type == "hello") return OnHello(packet.bytes);
  if (!greeted_) {
    reply.text = Refuse(0, *type, Error(ErrorCode::kFailedPrecondition, "hello first"));
    return reply;
  }
  if (*type == "register") return OnRegister(packet.bytes, packet);
  if (*type == "start") return OnStart(packet.bytes);
  if (*type == "signal") return OnSignal(packet.bytes);
  if (*type == "forget") return OnForget(packet.bytes);
  if (*type == "open_output") return OnOpenOutput(packet.bytes);
  reply.text = Refuse(0, "message", InvalidArgument("unknown message type '" + *type + "'"));
  return reply;
}

ExecutorServer::Reply ExecutorServer::OnHello(const std::string& text) {
  Reply reply;
  auto hello = Decode<protocol::Hello>(text);
  if (!hello) {
    reply.text = Refuse(0, "hello", hello.error());
    return reply;
  }
  greeted_ = true;
  protocol::HelloReply out;
  for (const auto& [id, spec] : jobs_) {
    if (spec.state == "registered") out.registered.push_back(id);
    bool dead = std::find(dead_on_arrival_.begin(), dead_on_arrival_.end(), id) !=
                dead_on_arrival_.end();
    if (spec.state == "running" && !dead) out.running.push_back(id);
  }
  out.machine_has_gpus = facts_.gpu_count > 0;
  reply.text = Encode(out);
  return reply;
}

ExecutorServer::Reply ExecutorServer::OnRegister(const std::string& text,
                                                 const protocol::Packet& packet) {
  Reply reply;
  auto request = Decode<protocol::RegisterJob>(text);
  if (!request) {
    reply.text = Refuse(0, "register", request.error());
    return reply;
  }
  const std::uint64_t id = request->id;
  protocol::RegisterReply out;
  out.id = id;
  auto fail = [&](const Error& error) {
    LogWarning("refused register of job " + std::to_string(id) + ": " + error.message());
    out.error = error.message();
    reply.text = Encode(out);
    return std::move(reply);
  };
  if (packet.fds.size() != 1) return fail(InvalidArgument("register needs exactly the client socket"));
  if (jobs_.count(id) || ::access(job_dir(id).c_str(), F_OK) == 0) {
    return fail(Error(ErrorCode::kAlreadyExists, "job " + std::to_string(id) + " already exists"));
  }
  auto peer = protocol::PeerCredentials(packet.fds[0].get());
  if (!peer) return fail(peer.error());
  auto allowed = CheckSubmitter(*peer, facts_.as_root, facts_.self_uid, facts_.broker_uid);
  if (!allowed) return fail(allowed.error());
  auto user = host::LookUpUser(peer->uid);
  if (!user) return fail(user.error());
  if (facts_.as_root) user->who.gid = peer->gid;  // the submitter's current gid
  // What runs comes from the user's own bytes on their connection, never
  // from the broker's message (trust rule 2).
  auto frame = protocol::TakeQueuedFrame(packet.fds[0].get());
  if (!frame) return fail(frame.error().WithContext("reading the submission"));
  auto cmd = protocol::PeekTag(*frame, "cmd");
  if (!cmd || *cmd != "new") return fail(InvalidArgument("the connection does not carry a submission"));
  auto submitted = Decode<protocol::SubmitRequest>(*frame);
  if (!submitted) return fail(submitted.error().WithContext("submission"));
  LaunchSpec spec;
  spec.id = id;
  spec.who = user->who;
  spec.home = user->facts.home;
  spec.shell = user->facts.shell;
  spec.argv = std::move(submitted->argv);
  spec.cwd = std::move(submitted->cwd);
  spec.env = std::move(submitted->env);
  if (const std::optional<std::string>& output = submitted->output) {
    protocol::CheckDestRequest check;
    check.id = id;
    check.who = spec.who;
    check.path = *output;
    auto answer = AskLauncher(Encode(check), {});
    if (!answer) return fail(answer.error());
    auto decoded = Decode<protocol::CheckDestReply>(answer->bytes);
    if (!decoded) return fail(decoded.error());
    if (decoded->error) return fail(Error(ErrorCode::kFailedPrecondition, *decoded->error));
    spec.output_dest = decoded->dest;
  }
  auto made = MakeJobDir(spec);
  if (!made) return fail(made.error());
  // With a start to follow, the spec reaches the disk when the start saves
  // it (as running, or as exited if it fails), before the reply below.
  auto saved = SaveSpec(specs_dir(), spec, request->start ? Sync::kDeferred : Sync::kNow);
  if (!saved) return fail(saved.error());
  out.uid = spec.who.uid;
  out.gid = spec.who.gid;
  out.user = spec.who.user;
  out.output_dest = spec.output_dest;
  jobs_[id] = std::move(spec);
  if (request->start) out.start = StartAfterRegistering(*request->start);
  reply.text = Encode(out);
  return reply;
}

protocol::StartReply ExecutorServer::StartAfterRegistering(const protocol::StartJob& request) {
  Result<protocol::StartReply> started = StartValidated(request);
  if (started) return *started;
  // Refused before anything ran (a placement outside the machine, say): the
  // job stays registered, so its spec must still be made durable here.
  LogWarning("refused start of job " + std::to_string(request.id) + ": " +
             started.error().message());
  auto it = jobs_.find(request.id);
  if (it != jobs_.end()) {
    if (auto saved = SaveSpec(specs_dir(), it->second); !saved) {
      LogWarning("cannot save spec of job " + std::to_string(request.id) + ": " +
                 saved.error().message());
    }
  }
  protocol::StartReply refused;
  refused.id = request.id;
  refused.error = started.error().message();
  return refused;
}

std::optional<JobDirOwner> ExecutorServer::OwnerOf(const LaunchSpec& spec) const {
  if (!facts_.as_root) return std::nullopt;
  return JobDirOwner{spec.who.uid, facts_.admin_gid};
}

Result<UniqueFd> ExecutorServer::OpenBuffer(const LaunchSpec& spec, int flags) const {
  HPCB_ASSIGN_OR_RETURN(UniqueFd dir, OpenJobDir(job_dir(spec.id)));
  return OpenJobBuffer(dir.get(), flags, OwnerOf(spec));
}

Result<void> ExecutorServer::MakeJobDir(const LaunchSpec& spec) {
  std::string dir = job_dir(spec.id);
  HPCB_TRY(CreateJobDir(dir, OwnerOf(spec), InfoText(spec)));
  if (!config_.no_dev_dir) {
    std::string link = config_.dev_dir + "/jobs/" + std::to_string(spec.id);
    ::unlink(link.c_str());
    if (::symlink(dir.c_str(), link.c_str()) != 0) {
      LogWarning("cannot create " + link + ": " + std::strerror(errno));
    }
  }
  return Ok();
}

std::string ExecutorServer::InfoText(const LaunchSpec& spec) {
  return Encode(JobInfo{&spec}) + "\n";
}

void ExecutorServer::WriteInfo(const LaunchSpec& spec) {
  Result<void> written = [&]() -> Result<void> {
    HPCB_ASSIGN_OR_RETURN(UniqueFd dir, OpenJobDir(job_dir(spec.id)));
    return ReplaceJobFile(dir.get(), "info.json", InfoText(spec), 0640, OwnerOf(spec));
  }();
  if (!written) {
    LogWarning("cannot write info.json of job " + std::to_string(spec.id) + ": " +
               written.error().message());
  }
}

void ExecutorServer::AppendLine(const LaunchSpec& spec, const std::string& line) {
  auto fd = OpenBuffer(spec, O_WRONLY | O_APPEND);
  if (!fd) {
    LogWarning("job " + std::to_string(spec.id) + ": " + fd.error().message());
    return;
  }
  (void)protocol::WriteAll(fd->get(), line + "\n");
}

Result<void> ExecutorServer::ValidatePlacement(const protocol::StartJob& request) const {
  HPCB_TRY(CheckSubset(request.cpus, facts_.cpus, "cpus"));
  HPCB_TRY(CheckSubset(request.mems, facts_.nodes, "mems"));
  std::set<int> gpu_ids;
  for (int i = 0; i < facts_.gpu_count; ++i) gpu_ids.insert(i);
  HPCB_TRY(CheckSubset(request.gpus, gpu_ids, "gpus"));
  if (!config_.no_cgroups && request.mems.empty()) {
    return InvalidArgument("mems must name at least one NUMA node");
  }
  return Ok();
}

ExecutorServer::Reply ExecutorServer::OnStart(const std::string& text) {
  Reply reply;
  auto request = Decode<protocol::StartJob>(text);
  if (!request) {
    reply.text = Refuse(0, "start", request.error());
    return reply;
  }
  auto out = StartValidated(*request);
  if (!out) {
    reply.text = Refuse(request->id, "start of job " + std::to_string(request->id), out.error());
    return reply;
  }
  reply.text = Encode(*out);
  return reply;
}

Result<protocol::StartReply> ExecutorServer::StartValidated(const protocol::StartJob& request) {
  auto it = jobs_.find(request.id);
  if (it == jobs_.end()) return Error(ErrorCode::kNotFound, "job " + std::to_string(request.id) + " is not registered");
  LaunchSpec& spec = it->second;
  if (spec.state != "registered") {
    return Error(ErrorCode::kFailedPrecondition, "job " + std::to_string(request.id) + " was already started");
  }
  HPCB_TRY(ValidatePlacement(request));
  protocol::StartReply out;
  out.id = request.id;
  bool cgroup_is_someone_elses = false;  // a populated leftover: never killed here
  auto fail_job = [&](const std::string& message) {
    // The job will never run: say why in its output and deliver it.
    AppendLine(spec, "hpc-batch: " + message);
    spec.state = "exited";
    spec.env.clear();
    (void)SaveSpec(specs_dir(), spec);
    if (!config_.no_cgroups && !cgroup_is_someone_elses) {
      (void)RemoveJobCgroup(config_.cgroup_root, spec.id);
    }
    out.error = message;
    out.output_error = DeliverOutput(spec);
    WriteInfo(spec);
    return out;
  };
  UniqueFd cgroup_dir;
  if (!config_.no_cgroups) {
    CgroupLimits limits{request.cpus, request.mems, request.memory_max};
    // Read at each start: swapon can add swap while we run. Unreadable
    // counts as swap present, which only makes memory.swap.max required.
    Result<bool> swap = host::HostHasSwap(facts_.proc_root);
    limits.host_has_swap = !swap || *swap;
    auto made = CreateJobCgroup(config_.cgroup_root, spec.id, limits);
    if (!made) {
      cgroup_is_someone_elses = made.error().code() == ErrorCode::kAlreadyExists;
      return fail_job("failed to start job: " + made.error().message());
    }
    cgroup_dir = std::move(*made);
  }
  host::PasswdFacts who{spec.who.user, spec.home, spec.shell};
  protocol::SpawnRequest spawn;
  spawn.id = spec.id;
  spawn.who = spec.who;
  spawn.argv = spec.argv;
  spawn.cwd = spec.cwd;
  spawn.env = BuildJobEnv(who, spec.env, spec.id, request.gpus, facts_.gpu_count > 0, facts_.lang);
  spawn.cpus = request.cpus;
  auto buffer = OpenBuffer(spec, O_WRONLY | O_APPEND);
  if (!buffer) return fail_job("failed to start job: " + buffer.error().message());
  std::vector<int> fds{buffer->get()};
  if (cgroup_dir.valid()) fds.push_back(cgroup_dir.get());
  auto answer = AskLauncher(Encode(spawn), fds);
  if (!answer) return fail_job("failed to start job: " + answer.error().message());
  auto decoded = Decode<protocol::SpawnReply>(answer->bytes);
  if (!decoded) return fail_job("failed to start job: " + decoded.error().message());
  if (decoded->error) return fail_job(*decoded->error);
  spec.state = "running";
  spec.pid = decoded->pid;
  spec.start_time = Now();
  spec.env.clear();  // forwarded secrets are gone once the job runs
  auto start = host::ProcStartTime(static_cast<int>(spec.pid), facts_.proc_root);
  spec.proc_start = start ? *start : 0;
  if (Result<void> saved = SaveSpec(specs_dir(), spec); !saved) {
    // Running but unrecorded: after a restart nobody could find, limit or
    // account for it, so it does not run at all.
    (void)::kill(-static_cast<pid_t>(spec.pid), SIGKILL);
    if (cgroup_dir.valid()) (void)KillJobCgroup(config_.cgroup_root, spec.id);
    return fail_job("failed to start job: cannot record it as running: " +
                    saved.error().message());
  }
  WriteInfo(spec);
  LogInfo("job " + std::to_string(spec.id) + " started (pid " + std::to_string(spec.pid) +
          ", cpus " + host::FormatIdList(request.cpus) + ")");
  out.pid = spec.pid;
  out.start_time = spec.start_time;
  return out;
}

std::optional<std::string> ExecutorServer::DeliverOutput(const LaunchSpec& spec) {
  std::string buffer_path = job_dir(spec.id) + "/output";
  if (!spec.output_dest) return std::nullopt;
  auto dir = OpenJobDir(job_dir(spec.id));
  if (!dir) return dir.error().message();
  auto buffer = OpenJobBuffer(dir->get(), O_RDONLY, OwnerOf(spec));
  if (!buffer) {
    if (buffer.error().code() == ErrorCode::kNotFound) return std::nullopt;  // nothing to deliver
    LogWarning("job " + std::to_string(spec.id) + ": not delivering output: " + buffer.error().message());
    return "not delivered: " + buffer.error().message();
  }
  protocol::DeliverRequest request;
  request.id = spec.id;
  request.who = spec.who;
  request.dest = *spec.output_dest;
  std::optional<std::string> error;
  auto answer = AskLauncher(Encode(request), {buffer->get()});
  if (!answer) {
    error = answer.error().message();
  } else {
    auto decoded = Decode<protocol::DeliverReply>(answer->bytes);
    if (!decoded) {
      error = decoded.error().message();
    } else {
      error = decoded->error;
    }
  }
  if (error) {
    if (error->size() > 400) error->resize(400);
    LogWarning("job " + std::to_string(spec.id) + ": could not save output to " +
               *spec.output_dest + ": " + *error + "; keeping " + buffer_path);
  } else {
    (void)::unlinkat(dir->get(), "output", 0);
  }
  return error;
}

void ExecutorServer::Finish(std::uint64_t id, std::optional<std::int64_t> exit_code) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.state != "running") return;
  LaunchSpec& spec = it->second;
  protocol::JobExited event;
  event.id = id;
  event.exit_code = exit_code;
  event.end_time = Now();
  if (!config_.no_cgroups) {
    event.oom = JobWasOomKilled(config_.cgroup_root, id);
    // Killed processes may still be exiting: wait a little, then retry from Run.
    auto removed = RemoveJobCgroup(config_.cgroup_root, id, std::chrono::milliseconds(500));
    if (!removed) {
      LogInfo("job " + std::to_string(id) + ": cgroup not removed yet (" +
              removed.error().message() + "); retrying");
      cgroups_to_remove_[id] = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    }
  }
  event.output_error = DeliverOutput(spec);
  if (!config_.no_dev_dir) {
    ::unlink((config_.dev_dir + "/jobs/" + std::to_string(id)).c_str());
  }
  spec.state = "exited";
  (void)SaveSpec(specs_dir(), spec);
  WriteInfo(spec);
  foreign_.erase(id);
  LogInfo("job " + std::to_string(id) + " finished (exit=" +
          (exit_code ? std::to_string(*exit_code) : std::string("unknown")) + ")");
  SendToBroker(Encode(event));
}

ExecutorServer::Reply ExecutorServer::OnSignal(const std::string& text) {
  Reply reply;
  auto request = Decode<protocol::SignalJob>(text);
  if (!request) {
    reply.text = Refuse(0, "signal", request.error());
    return reply;
  }
  auto it = jobs_.find(request->id);
  if (it == jobs_.end() || it->second.state != "running") {
    reply.text = Refuse(request->id, "signal",
                        Error(ErrorCode::kFailedPrecondition, "job is not running"));
    return reply;
  }
  const LaunchSpec& spec = it->second;
  auto start = host::ProcStartTime(static_cast<int>(spec.pid), facts_.proc_root);
  if (!start || *start != spec.proc_start || spec.pid <= 1) {
    reply.text = Refuse(request->id, "signal",
                        Error(ErrorCode::kNotFound, "the job's process is gone"));
    return reply;
  }
  if (request->note == "timeout") {
    AppendLine(spec, "hpc-batch: job exceeded its time limit (" +
                            std::to_string(request->limit_s) + "s); killing");
  }
  int sig = request->signal == "kill" ? SIGKILL : SIGTERM;
  if (sig == SIGKILL && !config_.no_cgroups) (void)KillJobCgroup(config_.cgroup_root, spec.id);
  if (::kill(-static_cast<pid_t>(spec.pid), sig) != 0 && errno != ESRCH) {
    reply.text = Refuse(request->id, "signal", Error::FromErrno(errno, "kill"));
    return reply;
  }
  reply.text = AckText(request->id, std::nullopt);
  return reply;
}

ExecutorServer::Reply ExecutorServer::OnForget(const std::string& text) {
  Reply reply;
  auto request = Decode<protocol::ForgetJob>(text);
  if (!request) {
    reply.text = Refuse(0, "forget", request.error());
    return reply;
  }
  const std::uint64_t id = request->id;
  auto it = jobs_.find(id);
  if (it == jobs_.end()) {
    reply.text = Refuse(id, "forget", Error(ErrorCode::kNotFound, "no such job"));
    return reply;
  }
  if (it->second.state == "running") {
    reply.text = Refuse(id, "forget", Error(ErrorCode::kFailedPrecondition, "job is running"));
    return reply;
  }
  // The tree is the user's: removed without following anything in it.
  if (auto removed = RemoveJobDir(job_dir(id)); !removed) {
    LogWarning("forget job " + std::to_string(id) + ": " + removed.error().message());
  }
  if (!config_.no_dev_dir) ::unlink((config_.dev_dir + "/jobs/" + std::to_string(id)).c_str());
  RemoveSpec(specs_dir(), id);
  jobs_.erase(it);
  reply.text = AckText(id, std::nullopt);
  return reply;
}

ExecutorServer::Reply ExecutorServer::OnOpenOutput(const std::string& text) {
  Reply reply;
  auto request = Decode<protocol::OpenOutput>(text);
  if (!request) {
    reply.text = Refuse(0, "open_output", request.error());
    return reply;
  }
  auto it = jobs_.find(request->id);
  if (it == jobs_.end()) {
    reply.text = Refuse(request->id, "open_output", Error(ErrorCode::kNotFound, "no such job"));
    return reply;
  }
  auto fd = OpenBuffer(it->second, O_RDONLY);
  if (!fd) {
    reply.text = Refuse(request->id, "open_output", fd.error());
    return reply;
  }
  reply.text = AckText(request->id, std::nullopt);
  reply.fds.push_back(std::move(*fd));
  return reply;
}

void ExecutorServer::OnLauncherEvent(const std::string& text) {
  auto event = Decode<protocol::ChildExited>(text);
  if (!event) {
    LogWarning("bad launcher event: " + event.error().message());
    return;
  }
  for (const auto& [id, spec] : jobs_) {
    if (spec.state == "running" && spec.pid == event->pid) {
      Finish(id, ExitCodeFromStatus(static_cast<int>(event->status)));
      return;
    }
  }
}

void ExecutorServer::PollForeign() {
  std::vector<std::uint64_t> gone;
  for (std::uint64_t id : foreign_) {
    const LaunchSpec& spec = jobs_[id];
    auto start = host::ProcStartTime(static_cast<int>(spec.pid), facts_.proc_root);
    if (!start || *start != spec.proc_start) gone.push_back(id);
  }
  for (std::uint64_t id : gone) Finish(id, std::nullopt);
}

Result<void> ExecutorServer::Run() {
  if (!config_.no_cgroups) {
    // Groups a crash left behind; running (adopted or dead-on-arrival) jobs
    // keep theirs: Finish still reads memory.events there.
    std::set<std::uint64_t> keep;
    for (const auto& [id, spec] : jobs_) {
      if (spec.state == "running") keep.insert(id);
    }
    for (std::uint64_t id : PruneEmptyJobCgroups(config_.cgroup_root, keep)) {
      LogInfo("removed the leftover empty cgroup of job " + std::to_string(id));
    }
  }
  for (;;) {
    for (auto it = cgroups_to_remove_.begin(); it != cgroups_to_remove_.end();) {
      auto removed = RemoveJobCgroup(config_.cgroup_root, it->first);
      if (removed || std::chrono::steady_clock::now() > it->second) {
        if (!removed) LogWarning("job cgroup stays: " + removed.error().message());
        it = cgroups_to_remove_.erase(it);
      } else {
        ++it;
      }
    }
    while (!launcher_events_.empty()) {
      std::string text = std::move(launcher_events_.front());
      launcher_events_.pop_front();
      if (greeted_) OnLauncherEvent(text);
    }
    if (greeted_ && !dead_on_arrival_.empty()) {
      for (std::uint64_t id : dead_on_arrival_) {
        LogInfo("job " + std::to_string(id) + " died while the daemon was away");
        Finish(id, std::nullopt);
      }
      dead_on_arrival_.clear();
    }
    struct pollfd fds[2] = {{broker_fd_, POLLIN, 0}, {launcher_fd_, POLLIN, 0}};
    // Launcher events wait until the broker has said hello.
    int ready = ::poll(fds, greeted_ ? 2 : 1, 1000);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "poll");
    }
    if (greeted_) PollForeign();
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      auto packet = protocol::ReceiveMessage(launcher_fd_);
      if (!packet) return packet.error().WithContext("launcher");
      launcher_events_.push_back(std::move(packet->bytes));
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      auto packet = protocol::ReceiveMessage(broker_fd_);
      if (!packet) {
        if (packet.error().code() == ErrorCode::kUnavailable) {
          LogInfo("broker went away; stopping");
          return Ok();
        }
        LogWarning("refused a broker message: " + packet.error().message());
        SendToBroker(AckText(0, packet.error().message()));
        continue;
      }
      Reply reply = Handle(*packet);
      std::vector<int> raw;
      for (const auto& fd : reply.fds) raw.push_back(fd.get());
      auto sent = protocol::SendMessage(broker_fd_, reply.text, raw);
      if (!sent) LogError("cannot reply to the broker: " + sent.error().message());
    }
  }
}

}  // namespace hpcb::executor

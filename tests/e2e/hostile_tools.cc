#include "tests/e2e/hostile_tools.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "common/host/host_files.h"
#include "protocol/client_framing.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "protocol/framing.h"

namespace hpcb::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::size_t ThreadCount() {
  std::size_t count = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (struct dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] != '.') ++count;
    }
    ::closedir(dir);
  }
  return count;
}

// /proc/PID/NAME, "" if it cannot be read. Not an ifstream: a process
// that exits between the open and the read makes read(2) fail with ESRCH,
// which libstdc++'s filebuf throws as an exception whatever the stream's
// exception mask, and an attacker loop would die of it.
std::string ProcText(pid_t pid, const char* name) {
  Result<std::string> text = host::ReadSmallFile("/proc/" + std::to_string(pid) + "/" + name);
  return text ? std::move(*text) : std::string();
}

// The real uid on the "Uid:" line of /proc/PID/status (readable for any
// process, unlike /proc/PID/exe of one that is no longer dumpable).
std::optional<uid_t> RealUid(pid_t pid) {
  std::istringstream in(ProcText(pid, "status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    unsigned long uid = 0;
    if (fields >> uid) return static_cast<uid_t>(uid);
  }
  return std::nullopt;
}

// Whether `launcher` is an ancestor of the process.
bool IsBelow(const ProcInfo& process, pid_t launcher) {
  pid_t parent = process.ppid;
  for (int depth = 0; depth < 32 && parent > 1; ++depth) {
    if (parent == launcher) return true;
    std::optional<ProcInfo> up = ReadProc(parent);
    if (!up) return false;
    parent = up->ppid;
  }
  return false;
}

void Report(int fd, const std::string& line) {
  std::string text = line + "\n";
  (void)!::write(fd, text.data(), text.size());
}

}  // namespace

Identity IdentityOf(const Account& who) {
  Identity identity;
  identity.uid = who.uid;
  identity.gid = who.gid;
  std::set<gid_t> groups = GroupsOf(who);
  identity.groups.assign(groups.begin(), groups.end());
  return identity;
}

bool BecomeUser(const Identity& who) {
  if (::setgroups(who.groups.size(), who.groups.data()) != 0) return false;
  if (::setresgid(who.gid, who.gid, who.gid) != 0) return false;
  if (::setresuid(who.uid, who.uid, who.uid) != 0) return false;
  uid_t r, e, s;
  return ::getresuid(&r, &e, &s) == 0 && r == who.uid && e == who.uid && s == who.uid;
}

pid_t ForkAs(const Account& who, const std::function<int()>& body) {
  if (ThreadCount() != 1) return -1;
  const Identity identity = IdentityOf(who);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (!BecomeUser(identity)) ::_exit(126);
  // Set after the uid change, which clears it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(125);
  ::signal(SIGPIPE, SIG_IGN);
  if (::chdir("/") != 0) ::_exit(126);
  ::_exit(body());
}

void KillAndReap(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (::waitpid(pid, nullptr, WNOHANG) == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
}

TimedResult RunTimed(const Identity& who, const std::string& cwd,
                     const std::vector<std::string>& argv, const std::vector<std::string>& env,
                     milliseconds timeout) {
  TimedResult result;
  std::vector<std::string> argv_storage = argv;
  std::vector<std::string> env_storage = env;
  std::vector<char*> args;
  std::vector<char*> envp;
  for (auto& word : argv_storage)
    args.push_back(word.data());
  args.push_back(nullptr);
  for (auto& entry : env_storage)
    envp.push_back(entry.data());
  envp.push_back(nullptr);
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return result;
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return result;
  }
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  pid_t pid = ::fork();
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull < 0 || ::dup2(devnull, 0) < 0 || ::dup2(out_pipe[1], 1) < 0 ||
        ::dup2(err_pipe[1], 2) < 0 || !BecomeUser(who)) {
      ::_exit(126);
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return result;
  }
  struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0 && Clock::now() < deadline) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (::poll(fds, 2, static_cast<int>(std::clamp<long long>(left, 1, 100))) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[16384];
      ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result.out : result.err).append(buffer, static_cast<std::size_t>(got));
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  pid_t reaped = 0;
  while ((reaped = ::waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  if (reaped != pid) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    result.timed_out = true;
    result.ms = MsSince(start);
    return result;
  }
  result.ms = MsSince(start);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

UniqueFd ConnectUnix(const std::string& path, bool nonblocking) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0));
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  if (!fd.valid() || path.size() >= sizeof addr.sun_path) return UniqueFd();
  std::memcpy(addr.sun_path, path.data(), path.size());
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  return rc == 0 ? std::move(fd) : UniqueFd();
}

int HoldConnections(const std::string& socket, std::size_t count, const std::string& first_frame,
                    milliseconds retry) {
  struct Slot {
    UniqueFd fd;
    Clock::time_point opened;
  };
  std::vector<Slot> slots(count);
  const std::string framed = first_frame.empty() ? "" : protocol::EncodeFrame(first_frame);
  // Refusals only show once the daemon gets to the connection, so after
  // one this stops opening new ones for `retry`: it then holds what the
  // daemon accepts and probes for more at that pace.
  Clock::time_point quiet_until;
  for (;;) {
    Clock::time_point now = Clock::now();
    for (Slot& slot : slots) {
      if (slot.fd.valid() || now < quiet_until) continue;
      slot.fd = ConnectUnix(socket, /*nonblocking=*/true);
      if (slot.fd.valid() && !framed.empty() &&
          ::send(slot.fd.get(), framed.data(), framed.size(), MSG_NOSIGNAL) !=
              static_cast<ssize_t>(framed.size())) {
        slot.fd.reset();
      }
      if (!slot.fd.valid()) {
        quiet_until = now + retry;
        continue;
      }
      slot.opened = now;
    }
    std::vector<struct pollfd> fds;
    std::vector<Slot*> owners;
    for (Slot& slot : slots) {
      if (!slot.fd.valid()) continue;
      fds.push_back({slot.fd.get(), POLLRDHUP, 0});
      owners.push_back(&slot);
    }
    if (fds.empty()) {
      std::this_thread::sleep_for(milliseconds(20));
      continue;
    }
    if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
    now = Clock::now();
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0) continue;
      if (now - owners[i]->opened < std::chrono::seconds(1)) quiet_until = now + retry;
      owners[i]->fd.reset();
    }
  }
}

int ReadRepliesSlowly(const std::string& socket, const std::string& request, std::size_t chunk,
                      milliseconds interval, int report_fd) {
  std::vector<char> buffer(chunk);
  for (int replies = 0;;) {
    UniqueFd fd = ConnectUnix(socket);
    if (!fd.valid() || !protocol::WriteFrame(fd.get(), request)) {
      std::this_thread::sleep_for(interval);
      continue;
    }
    std::string header;
    std::size_t body = 0;
    std::size_t got = 0;
    for (;;) {
      ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
      if (header.size() < 4) {
        header.append(buffer.data(),
                      std::min<std::size_t>(4 - header.size(), static_cast<std::size_t>(n)));
        if (header.size() == 4) body = protocol::FrameLength(header.data());
      }
      if (header.size() == 4 && got >= 4 + body) {
        Report(report_fd, "reply " + std::to_string(++replies) + " " + std::to_string(body));
        break;
      }
      std::this_thread::sleep_for(interval);
    }
  }
}

int SubmitRepeatedly(const std::string& socket, const std::string& request, milliseconds duration,
                     int report_fd, std::size_t count) {
  const auto end = Clock::now() + duration;
  for (std::size_t answered = 0; answered < count && Clock::now() < end; ++answered) {
    UniqueFd fd = ConnectUnix(socket);
    if (!fd.valid()) {
      Report(report_fd, std::string("broken connect: ") + std::strerror(errno));
      std::this_thread::sleep_for(milliseconds(10));
      --answered;
      continue;
    }
    struct timeval wait {
      30, 0
    };
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    // A refusal is written before the request is read, so a failed send
    // may still have an answer queued.
    (void)protocol::WriteFrame(fd.get(), request);
    auto frame = protocol::ReadFrame(fd.get(), protocol::kMaxClientFrame);
    if (!frame || !frame->has_value()) {
      Report(report_fd,
             "broken " + (frame ? std::string("closed without a reply") : frame.error().message()));
      continue;
    }
    const std::string& text = **frame;
    Result<bool> ok = protocol::PeekOk(text);
    if (ok && *ok) {
      auto reply = protocol::Decode<protocol::SubmitReply>(text);
      Report(report_fd, reply ? "id " + std::to_string(reply->id) : "broken undecodable reply");
    } else if (auto error = protocol::Decode<protocol::ErrorReply>(text); ok && error) {
      std::string message = error->error;
      std::replace(message.begin(), message.end(), '\n', ' ');
      Report(report_fd, "refused " + message);
    } else {
      Report(report_fd, "broken undecodable reply");
    }
  }
  return 0;
}

namespace {

// Sends `signal` (SIGSTOP: "stopped", else "signalled"), as they appear,
// to every process of our uid below `launcher` that `wanted` picks,
// writing "WHAT PID COMM\n" for each.
int SignalChildrenWhere(pid_t launcher, const std::function<bool(const ProcInfo&)>& wanted,
                        int signal, int report_fd) {
  const uid_t me = ::getuid();
  std::set<pid_t> stopped;
  for (;;) {
    for (pid_t pid : ListPids()) {
      if (stopped.contains(pid)) continue;
      std::optional<ProcInfo> info = ReadProc(pid);
      if (!info || !wanted(*info) || info->state == 'T' || info->state == 't' ||
          info->state == 'Z' || !IsBelow(*info, launcher) || RealUid(pid) != me) {
        continue;
      }
      if (::kill(pid, signal) == 0) {
        stopped.insert(pid);
        Report(report_fd, std::string(signal == SIGSTOP ? "stopped " : "signalled ") +
                              std::to_string(pid) + " " + info->comm);
      }
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
}

}  // namespace

int StopPreExecChildren(pid_t launcher, const std::string& job_comm, int report_fd) {
  return SignalChildrenWhere(
      launcher, [&](const ProcInfo& info) { return info.comm != job_comm; }, SIGSTOP, report_fd);
}

int SignalChildrenNamed(pid_t launcher, const std::string& comm, int signal, int report_fd) {
  return SignalChildrenWhere(
      launcher, [&](const ProcInfo& info) { return info.comm == comm; }, signal, report_fd);
}

std::optional<ProcInfo> ReadProc(pid_t pid) {
  const std::string text = ProcText(pid, "stat");
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcInfo info;
  info.pid = pid;
  info.comm = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> fields;
  std::string field;
  while (rest >> field)
    fields.push_back(field);
  // After the comm: state (field 3), ppid (4), ..., starttime (22).
  if (fields.size() < 20 || fields[0].empty()) return std::nullopt;
  info.state = fields[0][0];
  info.ppid = static_cast<pid_t>(std::stol(fields[1]));
  info.start_ticks = std::stoull(fields[19]);
  return info;
}

std::vector<pid_t> ListPids() {
  std::vector<pid_t> pids;
  if (DIR* dir = ::opendir("/proc")) {
    while (struct dirent* entry = ::readdir(dir)) {
      const char* name = entry->d_name;
      if (*name == '\0' || std::strspn(name, "0123456789") != std::strlen(name)) continue;
      pids.push_back(static_cast<pid_t>(std::atol(name)));
    }
    ::closedir(dir);
  }
  return pids;
}

bool IsLive(pid_t pid) {
  std::optional<ProcInfo> info = ReadProc(pid);
  return info && info->state != 'Z' && info->state != 'X';
}

std::vector<ProcInfo> Descendants(pid_t root) {
  std::multimap<pid_t, ProcInfo> children;
  for (pid_t pid : ListPids()) {
    if (std::optional<ProcInfo> info = ReadProc(pid)) children.emplace(info->ppid, *info);
  }
  std::vector<ProcInfo> out;
  std::vector<pid_t> frontier = {root};
  while (!frontier.empty()) {
    pid_t parent = frontier.back();
    frontier.pop_back();
    auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      out.push_back(it->second);
      frontier.push_back(it->second.pid);
    }
  }
  return out;
}

RepeatingProbe::RepeatingProbe(milliseconds period, std::function<ProbeResult()> call)
    : period_(period), call_(std::move(call)) {}

RepeatingProbe::~RepeatingProbe() {
  Stop();
}

void RepeatingProbe::Start() {
  stop_ = false;
  thread_ = std::thread([this] {
    auto next = Clock::now();
    while (!stop_) {
      ProbeResult result = call_();
      {
        std::lock_guard<std::mutex> lock(mu_);
        latencies_ms_.push_back(result.ms);
        if (!result.ok) ++failures_;
      }
      next = std::max(next + period_, Clock::now());
      while (!stop_ && Clock::now() < next)
        std::this_thread::sleep_for(milliseconds(5));
    }
  });
}

void RepeatingProbe::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<double> RepeatingProbe::latencies_ms() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latencies_ms_;
}

int RepeatingProbe::failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failures_;
}

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

}  // namespace hpcb::e2e

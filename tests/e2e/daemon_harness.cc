#include "tests/e2e/daemon_harness.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace hpcb::e2e {
namespace {

namespace fs = std::filesystem;
constexpr const char* kTestUser = "hpcb-e2e";

void EnsureTestUser(uid_t* uid, gid_t* gid) {
  if (::geteuid() != 0) {
    *uid = ::getuid();
    *gid = ::getgid();
    return;
  }
  if (::getpwnam(kTestUser) == nullptr) {
    std::string cmd = std::string("useradd --system --no-create-home --shell /usr/sbin/nologin ") +
                      kTestUser + " >/dev/null 2>&1";
    (void)!std::system(cmd.c_str());
  }
  struct passwd* pw = ::getpwnam(kTestUser);
  *uid = pw != nullptr ? pw->pw_uid : 65534;
  *gid = pw != nullptr ? pw->pw_gid : 65534;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

DaemonHarness::DaemonHarness() {
  EnsureTestUser(&uid_, &gid_);
  char pattern[] = "/tmp/hpcb-e2e.XXXXXX";
  dir_ = ::mkdtemp(pattern);
  ::chmod(dir_.c_str(), 0755);
  fs::create_directories(dir_ + "/bin");
  fs::create_directories(dir_ + "/work");
  // Copies, so the test user can run them wherever the build tree lives.
  for (const char* binary : {HPCB_DISPATCH, HPCB_DAEMON, HPCB_EXECUTOR, HPCB_BROKER}) {
    fs::copy_file(binary, dir_ + "/bin/" + fs::path(binary).filename().string(),
                  fs::copy_options::overwrite_existing);
  }
  if (::geteuid() == 0) {
    for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
      (void)!::lchown(entry.path().c_str(), uid_, gid_);
    }
    (void)!::chown(dir_.c_str(), uid_, gid_);
  }
}

// Stopping the daemon leaves jobs running by design, so the harness ends
// them itself: every process whose cwd is this harness's work dir is one of
// its jobs (the daemon roles run from "/").
namespace {
void KillJobsIn(const std::string& work_dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code link_ec;
    fs::path cwd = fs::read_symlink(entry.path() / "cwd", link_ec);
    if (!link_ec && cwd.string().rfind(work_dir, 0) == 0) ::kill(std::stoi(name), SIGKILL);
  }
}
}  // namespace

DaemonHarness::~DaemonHarness() {
  Stop();
  KillJobsIn(work());
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

CommandResult DaemonHarness::Run(const std::string& binary, const std::vector<std::string>& args,
                                 std::chrono::seconds timeout, bool wait) {
  CommandResult result;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) return result;
  std::vector<std::string> argv_storage = {binary};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string socket_env = "HPC_BATCH_SOCKET=" + dir_ + "/sock";
  std::string work_dir = work();
  int log_fd = wait ? -1 : ::open((dir_ + "/daemon.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(wait ? err_pipe[1] : log_fd, 2);
    if (!wait) ::dup2(log_fd, 1);
    if (::geteuid() == 0) {
      if (::setgroups(0, nullptr) != 0 || ::setresgid(gid_, gid_, gid_) != 0 ||
          ::setresuid(uid_, uid_, uid_) != 0) {
        ::_exit(126);
      }
    }
    if (::chdir(work_dir.c_str()) != 0) ::_exit(126);
    ::putenv(socket_env.data());
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (log_fd >= 0) ::close(log_fd);
  if (!wait) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    daemon_pid_ = pid;
    return result;
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0 && std::chrono::steady_clock::now() < deadline) {
    if (::poll(fds, 2, 100) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
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
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      result.err += "\n[harness: timed out]";
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

bool DaemonHarness::Start(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--no-cgroups", "--socket", dir_ + "/sock",
                                   "--state-dir", dir_ + "/state", "--dev-dir", dir_ + "/dev",
                                   "--reserve-cpu", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  if (std::find(extra.begin(), extra.end(), "--max-lifetime") == extra.end()) {
    args.insert(args.end(), {"--max-lifetime", "1h"});
  }
  Run(dir_ + "/bin/hpc-batchd", args, std::chrono::seconds(0), false);
  std::string sock = dir_ + "/sock";
  return WaitFor([&] {
    struct stat st;
    return ::stat(sock.c_str(), &st) == 0 && Dispatch({"list"}).exit_code == 0;
  }, std::chrono::seconds(10));
}

void DaemonHarness::Stop() {
  if (daemon_pid_ <= 0) return;
  ::kill(daemon_pid_, SIGTERM);
  int status = 0;
  bool gone = WaitFor([&] { return ::waitpid(daemon_pid_, &status, WNOHANG) == daemon_pid_; },
                      std::chrono::seconds(10));
  if (!gone) {
    ::kill(daemon_pid_, SIGKILL);
    ::waitpid(daemon_pid_, &status, 0);
  }
  daemon_pid_ = -1;
}

void DaemonHarness::Reload() {
  if (daemon_pid_ > 0) ::kill(daemon_pid_, SIGHUP);
}

CommandResult DaemonHarness::Dispatch(const std::vector<std::string>& args,
                                      std::chrono::seconds timeout) {
  return Run(dir_ + "/bin/dispatch", args, timeout, true);
}

std::string DaemonHarness::log() const { return Slurp(dir_ + "/daemon.log"); }

std::string DaemonHarness::ReadWorkFile(const std::string& name) const {
  return Slurp(work() + "/" + name);
}

bool DaemonHarness::WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

}  // namespace hpcb::e2e

#include "tests/e2e/daemon_harness.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
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
#include <regex>
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

DaemonHarness::DaemonHarness() : DaemonHarness(HarnessOptions{}) {}

DaemonHarness::DaemonHarness(HarnessOptions options) : options_(std::move(options)) {
  EnsureTestUser(&uid_, &gid_);
  char in_memory[] = "/dev/shm/hpcb-e2e.XXXXXX";
  char on_disk[] = "/tmp/hpcb-e2e.XXXXXX";
  const char* made = options_.scratch_in_memory ? ::mkdtemp(in_memory) : nullptr;
  dir_ = made != nullptr ? made : ::mkdtemp(on_disk);
  ::chmod(dir_.c_str(), 0755);
  fs::create_directories(dir_ + "/bin");
  fs::create_directories(dir_ + "/work");
  // Copies, so the test user can run them wherever the build tree lives.
  for (const char* binary :
       {HPCB_DISPATCH, HPCB_DAEMON, HPCB_EXECUTOR, HPCB_BROKER, HPCB_AS_USER}) {
    std::string name = fs::path(binary).filename().string();
    auto replaced = options_.replace_binaries.find(name);
    fs::copy_file(replaced == options_.replace_binaries.end() ? binary : replaced->second,
                  dir_ + "/bin/" + name, fs::copy_options::overwrite_existing);
  }
  for (const std::string& extra : options_.extra_binaries) {
    std::string to = dir_ + "/bin/" + fs::path(extra).filename().string();
    fs::copy_file(extra, to, fs::copy_options::overwrite_existing);
    ::chmod(to.c_str(), 0755);
  }
  if (::geteuid() == 0 && !options_.daemon_as_root) {
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
                                 std::chrono::seconds timeout, bool wait, const std::string& user,
                                 const std::string& cwd) {
  CommandResult result;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) return result;
  std::vector<std::string> argv_storage = {binary};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string socket_env = "HPC_BATCH_SOCKET=" + dir_ + "/sock";
  std::string work_dir = cwd.empty() ? work() : cwd;
  // Resolved before fork: the child only makes system calls and initgroups.
  uid_t run_uid = uid_;
  gid_t run_gid = gid_;
  bool change = ::geteuid() == 0 && !(!wait && options_.daemon_as_root);
  std::string user_name = user;
  if (!user.empty()) {
    struct passwd* pw = ::getpwnam(user.c_str());
    if (pw == nullptr) {
      result.err = "[harness: no user " + user + "]";
      ::close(out_pipe[0]);
      ::close(out_pipe[1]);
      ::close(err_pipe[0]);
      ::close(err_pipe[1]);
      return result;
    }
    run_uid = pw->pw_uid;
    run_gid = pw->pw_gid;
  }
  std::vector<std::string> env_storage = wait ? std::vector<std::string>{} : options_.daemon_env;
  int log_fd = wait ? -1
                    : ::open((dir_ + "/daemon.log").c_str(),
                             O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(wait ? err_pipe[1] : log_fd, 2);
    if (!wait) ::dup2(log_fd, 1);
    if (change) {
      int groups_ok =
          user_name.empty() ? ::setgroups(0, nullptr) : ::initgroups(user_name.c_str(), run_gid);
      if (groups_ok != 0 || ::setresgid(run_gid, run_gid, run_gid) != 0 ||
          ::setresuid(run_uid, run_uid, run_uid) != 0) {
        ::_exit(126);
      }
    }
    if (::chdir(work_dir.c_str()) != 0) ::_exit(126);
    ::putenv(socket_env.data());
    for (auto& e : env_storage)
      ::putenv(e.data());
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
  return StartDaemon(extra, true);
}

bool DaemonHarness::StartNoProbe(const std::vector<std::string>& extra) {
  return StartDaemon(extra, false);
}

bool DaemonHarness::StartDaemon(const std::vector<std::string>& extra, bool probe) {
  std::vector<std::string> args = {"--no-cgroups", "--socket",      dir_ + "/sock",
                                   "--state-dir",  dir_ + "/state", "--dev-dir",
                                   dir_ + "/dev",  "--reserve-cpu", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  if (std::find(extra.begin(), extra.end(), "--max-lifetime") == extra.end()) {
    args.insert(args.end(), {"--max-lifetime", "1h"});
  }
  Run(dir_ + "/bin/hpc-batchd", args, std::chrono::seconds(0), false);
  std::string sock = dir_ + "/sock";
  return WaitFor(
      [&] {
        struct stat st;
        return ::stat(sock.c_str(), &st) == 0 && (!probe || Dispatch({"list"}).exit_code == 0);
      },
      options_.start_timeout);
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

std::string DaemonHarness::RowOfJob(const std::string& list_text, int id) {
  std::istringstream rows(list_text);
  std::string line;
  while (std::getline(rows, line)) {
    std::istringstream words(line);
    std::string user, job;
    words >> user >> job;
    if (job == std::to_string(id)) return line;
  }
  return "";
}

int DaemonHarness::JobIdIn(const std::string& submit_out) {
  std::smatch match;
  if (std::regex_search(submit_out, match, std::regex("job ([0-9]+) "))) return std::stoi(match[1]);
  return -1;
}

bool DaemonHarness::RolePids(const std::string& log, pid_t* executor, pid_t* broker) {
  std::smatch match;
  if (!std::regex_search(log, match, std::regex("executor pid ([0-9]+), broker pid ([0-9]+)"))) {
    return false;
  }
  *executor = std::stoi(match[1]);
  *broker = std::stoi(match[2]);
  return true;
}

int DaemonHarness::WaitForExit(std::chrono::seconds timeout) {
  if (daemon_pid_ <= 0) return -1;
  int status = 0;
  bool gone =
      WaitFor([&] { return ::waitpid(daemon_pid_, &status, WNOHANG) == daemon_pid_; }, timeout);
  if (!gone) return -1;
  daemon_pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void DaemonHarness::Reload() {
  if (daemon_pid_ > 0) ::kill(daemon_pid_, SIGHUP);
}

CommandResult DaemonHarness::Dispatch(const std::vector<std::string>& args,
                                      std::chrono::seconds timeout) {
  return Run(dir_ + "/bin/dispatch", args, timeout, true);
}

CommandResult DaemonHarness::RunAs(const std::string& user, const std::string& cwd,
                                   const std::string& binary, const std::vector<std::string>& args,
                                   std::chrono::seconds timeout) {
  return Run(binary, args, timeout, true, user, cwd);
}

CommandResult DaemonHarness::DispatchAs(const std::string& user, const std::string& cwd,
                                        const std::vector<std::string>& args,
                                        std::chrono::seconds timeout) {
  return Run(dir_ + "/bin/dispatch", args, timeout, true, user, cwd);
}

std::string DaemonHarness::log() const {
  return Slurp(dir_ + "/daemon.log");
}

std::string DaemonHarness::ReadWorkFile(const std::string& name) const {
  return Slurp(work() + "/" + name);
}

std::string DaemonHarness::UntilReleased(const std::string& name) {
  // Exit 97 past the bound: a job whose release never came fails, it does
  // not carry on as if released.
  return "i=0; while [ ! -e '" + name + "' ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; " +
         "[ -e '" + name + "' ] || exit 97";
}

void DaemonHarness::Release(const std::string& name, const std::string& dir) const {
  const std::string path = (dir.empty() ? work() : dir) + "/" + name;
  std::ofstream file(path);
  file << "go\n";
  if (!file.flush()) ADD_FAILURE() << "could not create " << path << " to release a job";
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

#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <thread>

#include "common/base/unique_fd.h"

extern char** environ;

namespace hpcb {
namespace {

constexpr std::size_t kMaxOutputBytes = 64u << 20;

using Clock = std::chrono::steady_clock;

// posix_spawn's attributes and file actions, destroyed on every path.
class SpawnSetup {
 public:
  SpawnSetup() {
    ::posix_spawnattr_init(&attr_);
    ::posix_spawn_file_actions_init(&actions_);
  }
  ~SpawnSetup() {
    ::posix_spawnattr_destroy(&attr_);
    ::posix_spawn_file_actions_destroy(&actions_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
  posix_spawnattr_t* attr() { return &attr_; }
  posix_spawn_file_actions_t* actions() { return &actions_; }

 private:
  posix_spawnattr_t attr_{};
  posix_spawn_file_actions_t actions_{};
};

// The text is put in a sealed-off memory file rather than a pipe: nothing
// has to be written while the child runs, so a child that never reads its
// input can neither block us nor raise SIGPIPE.
Result<UniqueFd> StdinFor(const std::string& text) {
  if (text.empty()) {
    UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!null.valid()) return Error::FromErrno(errno, "cannot open /dev/null");
    return null;
  }
  UniqueFd fd(::memfd_create("dispatch-stdin", MFD_CLOEXEC));
  if (!fd.valid()) return Error::FromErrno(errno, "cannot create the input of a helper");
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(errno, "cannot write the input of a helper");
    done += static_cast<std::size_t>(n);
  }
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) {
    return Error::FromErrno(errno, "cannot rewind the input of a helper");
  }
  return fd;
}

void KillAndReap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

Result<ProcessOutcome> RunProcess(const ProcessSpec& spec) {
  const std::string& name = spec.program;
  HPCB_ASSIGN_OR_RETURN(UniqueFd input, StdinFor(spec.stdin_text));
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe");
  UniqueFd out_read(out_pipe[0]);
  UniqueFd out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe");
  UniqueFd err_read(err_pipe[0]);
  UniqueFd err_write(err_pipe[1]);

  SpawnSetup setup;
  ::posix_spawn_file_actions_adddup2(setup.actions(), input.get(), STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(setup.actions(), out_write.get(), STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(setup.actions(), err_write.get(), STDERR_FILENO);
  // dispatch ignores SIGPIPE, and an ignored signal stays ignored across
  // exec: give the helper the default back.
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  ::posix_spawnattr_setsigdefault(setup.attr(), &defaults);
  ::posix_spawnattr_setflags(setup.attr(), POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(name.c_str()));
  for (const std::string& arg : spec.args)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const bool has_slash = name.find('/') != std::string::npos;
  int rc =
      has_slash
          ? ::posix_spawn(&pid, name.c_str(), setup.actions(), setup.attr(), argv.data(), environ)
          : ::posix_spawnp(&pid, name.c_str(), setup.actions(), setup.attr(), argv.data(), environ);
  if (rc != 0) return Error::FromErrno(rc, "cannot run " + name);
  input.reset();
  out_write.reset();
  err_write.reset();

  const auto deadline = Clock::now() + spec.timeout;
  auto timed_out = [&] {
    KillAndReap(pid);
    return Error(ErrorCode::kUnavailable, name + " did not finish within " +
                                              std::to_string(spec.timeout.count() / 1000) +
                                              "s and was killed");
  };
  ProcessOutcome outcome;
  pollfd fds[2] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}};
  std::string* sinks[2] = {&outcome.out, &outcome.err};
  int open_fds = 2;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return timed_out();
    int ready = ::poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      KillAndReap(pid);
      return Error::FromErrno(errno, "poll");
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[65536];
      ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      sinks[i]->append(buffer, static_cast<std::size_t>(n));
      if (outcome.out.size() + outcome.err.size() > kMaxOutputBytes) {
        KillAndReap(pid);
        return Error(ErrorCode::kResourceExhausted, name + " printed more than 64 MiB");
      }
    }
  }
  // Both pipes are closed; the program is exiting or has left a child
  // holding nothing of ours. Reap it within the same deadline.
  while (true) {
    int status = 0;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) return Error::FromErrno(errno, "waitpid");
    if (done == pid) {
      if (WIFSIGNALED(status)) {
        outcome.signal = WTERMSIG(status);
      } else {
        outcome.exit_code = WEXITSTATUS(status);
      }
      return outcome;
    }
    if (Clock::now() >= deadline) return timed_out();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace hpcb

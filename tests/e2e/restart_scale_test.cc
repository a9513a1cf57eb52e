// A daemon that holds 200k queued jobs starts, and starts again: the
// state the roles exchange at start-up is paged, not one message, and the
// broker rebuilds a queue it has no file for from the root side's records.
//
// The jobs are written straight into a fresh state directory as launch
// specs (the root side's records), behind one running job that holds every
// cpu (a real process the test started, adopted as the daemon finds it),
// so they stay queued. HPCB_SCALE_JOBS shrinks the count for a quick run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/host/host_files.h"
#include "executor/launch_spec.h"
#include "tests/e2e/daemon_harness.h"

namespace hpcb::e2e {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

std::size_t JobCount() {
  const char* text = std::getenv("HPCB_SCALE_JOBS");
  return text != nullptr ? std::strtoul(text, nullptr, 10) : 200000;
}

// A process that stands for a job already running (cwd in the harness's
// work dir, so the harness ends it with the rest of its jobs).
pid_t StartBlocker(const std::string& cwd) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(127);
    ::execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

HarnessOptions SlowStart() {
  HarnessOptions options;
  options.start_timeout = seconds(180);
  options.scratch_in_memory = true;
  return options;
}

class RestartScaleTest : public ::testing::Test {
 protected:
  RestartScaleTest() : daemon_(SlowStart()) {}

  void TearDown() override {
    if (blocker_ > 0) {
      ::kill(blocker_, SIGKILL);
      ::waitpid(blocker_, nullptr, 0);
    }
  }

  executor::LaunchSpec Spec(std::uint64_t id) const {
    executor::LaunchSpec spec;
    spec.id = id;
    spec.who = {daemon_.client_uid(), daemon_.client_gid(), "hpcb-e2e", {daemon_.client_gid()}};
    spec.home = "/";
    spec.argv = {"echo", "queued " + std::to_string(id)};
    spec.cwd = daemon_.work();
    spec.request.cpu = 1;
    spec.request.max_mem_gb = 0.25;
    spec.request.max_time_s = 600;
    spec.request.submit_time = 1.8e9;
    return spec;
  }

  // The state dir as the daemon (running as the test user) must own it.
  void LayOutState(std::size_t queued) {
    const std::string state = daemon_.state();
    for (const char* sub : {"/specs", "/jobs", "/run"})
      fs::create_directories(state + sub);
    blocker_ = StartBlocker(daemon_.work());
    ASSERT_GT(blocker_, 0);
    Result<std::uint64_t> started = host::ProcStartTime(blocker_);
    ASSERT_TRUE(started);
    executor::LaunchSpec running = Spec(1);
    running.argv = {"sleep", "600"};
    running.request.cpu = 2;
    running.state = protocol::SpecState::kRunning;
    running.pid = blocker_;
    running.proc_start = *started;
    running.start_time = 1.8e9;
    running.placement = protocol::PlacementRecord{{0, 1}, {0}, {}, {{-1, 0.25}}, {}, false};
    ASSERT_TRUE(executor::SaveSpec(state + "/specs", running, host::Sync::kNone));
    for (std::uint64_t id = 2; id < 2 + queued; ++id) {
      Result<std::uint64_t> saved =
          executor::SaveSpec(state + "/specs", Spec(id), host::Sync::kNone);
      ASSERT_TRUE(saved) << saved.error().message();
    }
    if (::geteuid() == 0) {
      for (const auto& entry : fs::recursive_directory_iterator(state)) {
        (void)!::lchown(entry.path().c_str(), daemon_.client_uid(), daemon_.client_gid());
      }
      (void)!::chown(state.c_str(), daemon_.client_uid(), daemon_.client_gid());
    }
  }

  // Queued rows in `dispatch list`, and whether job 1 is listed running.
  std::size_t QueuedRows(bool* blocker_running) {
    CommandResult listed = daemon_.Dispatch({"list", "--json"}, seconds(120));
    EXPECT_EQ(listed.exit_code, 0) << listed.err << daemon_.log();
    *blocker_running = listed.out.find(R"("id":1,)") != std::string::npos &&
                       listed.out.find(R"("state":"running")") != std::string::npos;
    std::size_t count = 0;
    for (std::size_t at = listed.out.find(R"("state":"queued")"); at != std::string::npos;
         at = listed.out.find(R"("state":"queued")", at + 1)) {
      ++count;
    }
    return count;
  }

  DaemonHarness daemon_;
  pid_t blocker_ = -1;
};

TEST_F(RestartScaleTest, TwoHundredThousandQueuedJobsSurviveRestarts) {
  const std::size_t queued = JobCount();
  LayOutState(queued);
  if (HasFatalFailure()) return;
  const std::vector<std::string> flags = {"--max-lifetime", "1h", "--max-queued-per-user",
                                          std::to_string(queued + 10)};
  const auto boot = std::chrono::steady_clock::now();
  ASSERT_TRUE(daemon_.Start(flags)) << daemon_.log();
  std::cout << "first start with " << queued << " specs: "
            << std::chrono::duration_cast<seconds>(std::chrono::steady_clock::now() - boot).count()
            << " s\n";
  bool running = false;
  EXPECT_EQ(QueuedRows(&running), queued) << daemon_.log().substr(0, 4000);
  EXPECT_TRUE(running) << "the job holding every cpu was not adopted";
  EXPECT_NE(daemon_.log().find("rebuilt from the root side's record"), std::string::npos);

  // Again, now that the broker has its own file of them.
  daemon_.Stop();
  const auto reboot = std::chrono::steady_clock::now();
  ASSERT_TRUE(daemon_.Start(flags)) << daemon_.log();
  std::cout
      << "restart: "
      << std::chrono::duration_cast<seconds>(std::chrono::steady_clock::now() - reboot).count()
      << " s\n";
  EXPECT_EQ(QueuedRows(&running), queued);
  EXPECT_TRUE(running);
  CommandResult submit = daemon_.Dispatch({"new", "--max-mem", "0.25", "--", "true"});
  EXPECT_EQ(submit.exit_code, 0) << submit.err;
  EXPECT_NE(submit.out.find("job " + std::to_string(queued + 2) + " queued"), std::string::npos)
      << submit.out;
}

}  // namespace
}  // namespace hpcb::e2e

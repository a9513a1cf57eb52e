#include "launcher/job_shepherd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "protocol/host/run_record.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::launcher {
namespace {

using hpcb::testing::ReadText;
using hpcb::testing::TempDir;

// The highest CPU this process may run on, or -1 when it may run on only
// one (the test could not tell a pinned shepherd from an unpinned one).
int LastOfSeveralCpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) return -1;
  for (int cpu = CPU_SETSIZE - 1; cpu >= 0; --cpu) {
    if (CPU_ISSET(cpu, &allowed)) return cpu;
  }
  return -1;
}

// Reaps `pid`, waiting at most 10 s; false if it did not end.
bool ReapWithin10s(pid_t pid) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  (void)::kill(pid, SIGKILL);
  (void)::waitpid(pid, nullptr, 0);
  return false;
}

TEST(JobShepherdTest, TheShepherdRunsOnTheJobsCpusBeforeItForksTheJob) {
  const int cpu = LastOfSeveralCpus();
  if (cpu < 0) GTEST_SKIP() << "this process may run on one CPU only";
  TempDir dir;
  protocol::SpawnRequest request;
  request.id = 7;
  request.who.uid = ::getuid();
  request.who.gid = ::getgid();
  request.argv = {"sh", "-c", "grep ^Cpus_allowed_list: /proc/self/status; exec sleep 0.3"};
  request.cwd = dir.path();
  request.env = {"PATH=/usr/bin:/bin"};
  request.cpus = {cpu};
  Result<PreparedJob> job = PreparedJob::Build(request);
  ASSERT_TRUE(job) << job.error().message();
  const std::string output = dir.path() + "/output";
  UniqueFd buffer(::open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  ASSERT_TRUE(buffer.valid());
  SpawnFds fds;
  fds.buffer = buffer.get();
  ShepherdOptions options;
  options.change_identity = false;
  options.run_dir = dir.path();

  Result<ShepherdChild> shepherd = StartShepherd(request, *job, fds, options);
  ASSERT_TRUE(shepherd) << shepherd.error().message();
  cpu_set_t on;
  CPU_ZERO(&on);
  ASSERT_EQ(::sched_getaffinity(shepherd->pid, sizeof on, &on), 0);
  EXPECT_EQ(CPU_COUNT(&on), 1) << "the shepherd may still run on the launcher's CPUs";
  EXPECT_TRUE(CPU_ISSET(cpu, &on));

  struct pollfd pfd {
    shepherd->report.get(), POLLIN, 0
  };
  ASSERT_EQ(::poll(&pfd, 1, 10'000), 1) << "no report within 10 s";
  ShepherdReport report;
  ASSERT_EQ(::read(shepherd->report.get(), &report, sizeof report),
            static_cast<ssize_t>(sizeof report));
  EXPECT_EQ(report.stage, 0) << DescribeShepherdReport(report, *job, options.exec_deadline);
  ASSERT_TRUE(ReapWithin10s(shepherd->pid));
  EXPECT_EQ(ReadText(output), "Cpus_allowed_list:\t" + std::to_string(cpu) + "\n");
  Result<host::RunRecord> record = host::LoadRunRecord(dir.path(), request.id);
  ASSERT_TRUE(record) << record.error().message();
  EXPECT_EQ(record->pid, report.pid);
}

}  // namespace
}  // namespace hpcb::launcher

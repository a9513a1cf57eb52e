// End-to-end behaviour of the real daemon and the real client.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/base/unique_fd.h"
#include "protocol/client_messages.h"
#include "tests/e2e/daemon_harness.h"
#include "tests/testing/scoped_disposition.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::e2e {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

class E2eTest : public ::testing::Test {
 protected:
  void StartOrFail(const std::vector<std::string>& extra = {}) {
    ASSERT_TRUE(daemon_.Start(extra)) << daemon_.log();
  }
  bool FileHas(const std::string& name, const std::string& text) {
    return daemon_.ReadWorkFile(name).find(text) != std::string::npos;
  }
  std::string ListFinished() { return daemon_.Dispatch({"list", "--finished"}).out; }
  // The line of `list --finished` for job `id`.
  std::string RowOf(int id) { return DaemonHarness::RowOfJob(ListFinished(), id); }
  bool Finished(int id) { return RowOf(id).find(" done ") != std::string::npos; }
  // `dispatch new` with a small memory budget, for the scheduling tests that
  // are about cpus: the host's NUMA memory (5 GiB on some CI machines, where
  // two default 2 GiB budgets do not fit) must not decide what runs.
  CommandResult NewSmall(std::vector<std::string> args) {
    args.insert(args.begin(), {"new", "--max-mem", "0.25"});
    return daemon_.Dispatch(args);
  }
  DaemonHarness daemon_;
};

TEST_F(E2eTest, EchoHelloRunsAndItsOutputIsDelivered) {
  StartOrFail();

  CommandResult submit = daemon_.Dispatch({"new", "--", "echo", "hello"});

  ASSERT_EQ(submit.exit_code, 0) << submit.err << daemon_.log();
  EXPECT_NE(submit.out.find("job 1 "), std::string::npos) << submit.out;
  EXPECT_NE(submit.out.find("output will be saved to " + daemon_.work() + "/output.1.log"),
            std::string::npos)
      << submit.out;
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return FileHas("output.1.log", "hello"); },
                                     std::chrono::seconds(10)))
      << daemon_.log();
  EXPECT_EQ(daemon_.ReadWorkFile("output.1.log"), "hello\n");
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(1); }, seconds(5)));
  std::string row = RowOf(1);
  EXPECT_NE(row.find("echo hello"), std::string::npos) << row;
  EXPECT_EQ(row.substr(row.size() - 2), " 0") << row;
}

// One daemon per state directory: a second hpc-batchd on the same state
// (with a socket of its own) exits 78 naming the first, which keeps its
// socket and runs its queued job once.
TEST_F(E2eTest, ASecondDaemonOnTheSameStateIsRefusedAndTouchesNothing) {
  StartOrFail();
  CommandResult first_job = daemon_.Dispatch({"new", "--", "sh", "-c", "sleep 1; echo once"});
  ASSERT_EQ(first_job.exit_code, 0) << first_job.err;
  const int id = DaemonHarness::JobIdIn(first_job.out);
  const std::string other_socket = daemon_.dir() + "/sock2";
  CommandResult second =
      daemon_.RunAs("", daemon_.work(), daemon_.bin() + "/hpc-batchd",
                    {"--no-cgroups", "--socket", other_socket, "--state-dir", daemon_.state(),
                     "--dev-dir", daemon_.dir() + "/dev2", "--reserve-cpu", "0"},
                    seconds(10));
  EXPECT_EQ(second.exit_code, 78) << second.err;
  EXPECT_NE(second.err.find("another hpc-batchd (pid " + std::to_string(daemon_.daemon_pid()) +
                            ") holds " + daemon_.state()),
            std::string::npos)
      << second.err;
  struct stat st {};
  EXPECT_NE(::stat(other_socket.c_str(), &st), 0) << "the second daemon made its socket";
  EXPECT_EQ(::stat(daemon_.socket().c_str(), &st), 0) << "the first daemon's socket is gone";
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(id); }, seconds(10))) << daemon_.log();
  EXPECT_EQ(daemon_.ReadWorkFile("output." + std::to_string(id) + ".log"), "once\n");
}

// The line of /proc/PID/status that names the ignored signals.
std::string SigIgnLine(const std::string& status) {
  std::istringstream lines(status);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("SigIgn:", 0) == 0) return line;
  }
  return "";
}

// A daemon started with signals ignored (as from a script's background job,
// by nohup, or by a parent that ignores SIGCHLD) does not keep them: the
// launcher puts them back at start-up, so its shepherds still see their
// jobs end (an ignored SIGCHLD has the kernel reap children unasked), and
// no job starts with a signal ignored.
TEST_F(E2eTest, SignalsIgnoredByWhateverStartedTheDaemonReachNoJob) {
  bool started = false;
  {
    testing::ScopedDisposition sigint(SIGINT, SIG_IGN);
    testing::ScopedDisposition sigquit(SIGQUIT, SIG_IGN);
    testing::ScopedDisposition sigusr2(SIGUSR2, SIG_IGN);
    testing::ScopedDisposition sigchld(SIGCHLD, SIG_IGN);
    // No probe yet: `dispatch list` is waited for, and with SIGCHLD ignored
    // here it could not be.
    started = daemon_.StartNoProbe();
  }
  ASSERT_TRUE(started) << daemon_.log();
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return daemon_.Dispatch({"list"}).exit_code == 0; },
                                     seconds(10)))
      << daemon_.log();

  CommandResult status = daemon_.Dispatch({"new", "--", "cat", "/proc/self/status"});
  ASSERT_EQ(status.exit_code, 0) << status.err << daemon_.log();
  CommandResult three = daemon_.Dispatch({"new", "--", "sh", "-c", "exit 3"});
  ASSERT_EQ(three.exit_code, 0) << three.err << daemon_.log();
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(1) && Finished(2); }, seconds(10)))
      << daemon_.log();
  EXPECT_EQ(SigIgnLine(daemon_.ReadWorkFile("output.1.log")), "SigIgn:\t0000000000000000");
  const std::string row = RowOf(2);
  EXPECT_EQ(row.substr(row.size() - 2), " 3") << row;
}

// A sysfs tree in which cpus 0 and 1 (which every test machine has) are
// SMT siblings of one core on one NUMA node.
std::string FakeSmtSysfs(const std::string& dir) {
  namespace fs = std::filesystem;
  std::string root = dir + "/smt-sys";
  auto write = [&](const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root + path).parent_path());
    std::ofstream(root + path) << text;
  };
  write("/devices/system/cpu/online", "0-1\n");
  write("/devices/system/node/online", "0\n");
  write("/devices/system/node/node0/cpulist", "0-1\n");
  write("/devices/system/cpu/cpu0/topology/thread_siblings_list", "0-1\n");
  write("/devices/system/cpu/cpu1/topology/thread_siblings_list", "0-1\n");
  return root;
}

TEST_F(E2eTest, OnSmtACpuIsRoundedUpToAWholeCore) {
  StartOrFail({"--sys-root", FakeSmtSysfs(daemon_.dir())});
  CommandResult first =
      NewSmall({"--", "sh", "-c",
                "grep ^Cpus_allowed_list: /proc/self/status; " + DaemonHarness::UntilReleased()});
  ASSERT_EQ(first.exit_code, 0) << first.err << daemon_.log();
  EXPECT_NE(first.out.find("job 1 running (2 cpus = 1 core, "), std::string::npos) << first.out;
  CommandResult second = NewSmall({"--", "true"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("job 2 queued (2 cpus = 1 core, "), std::string::npos) << second.out;
  daemon_.Release();
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(2); }, seconds(30))) << daemon_.log();
  EXPECT_NE(daemon_.ReadWorkFile("output.1.log").find("Cpus_allowed_list:\t0-1"), std::string::npos)
      << daemon_.ReadWorkFile("output.1.log");
}

TEST_F(E2eTest, ThreadUnitHandsOutSingleCpus) {
  StartOrFail({"--sys-root", FakeSmtSysfs(daemon_.dir()), "--cpu-unit", "thread"});
  CommandResult first = NewSmall({"--", "sleep", "30"});
  CommandResult second = NewSmall({"--", "sleep", "30"});
  EXPECT_NE(first.out.find("job 1 running (1 cpu, "), std::string::npos) << first.out;
  EXPECT_NE(second.out.find("job 2 running (1 cpu, "), std::string::npos) << second.out;
}

TEST_F(E2eTest, ListShowsQueuedAndRunningJobsWithTheHeader) {
  StartOrFail();
  CommandResult first = daemon_.Dispatch({"new", "--cpu", "2", "--", "sleep", "30"});
  ASSERT_EQ(first.exit_code, 0) << first.err << daemon_.log();
  ASSERT_EQ(daemon_.Dispatch({"new", "--", "sleep", "30"}).exit_code, 0);

  CommandResult list = daemon_.Dispatch({"list"});

  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out.rfind("USER", 0), 0u) << list.out;
  EXPECT_NE(list.out.find("sleep 30"), std::string::npos);
  EXPECT_NE(list.out.find("queued"), std::string::npos) << list.out;
}

TEST_F(E2eTest, KillRemovesQueuedAndSignalsRunning) {
  StartOrFail();
  ASSERT_EQ(daemon_.Dispatch({"new", "--cpu", "2", "--", "sleep", "60"}).exit_code, 0);
  ASSERT_EQ(daemon_.Dispatch({"new", "--", "sleep", "60"}).exit_code, 0);

  CommandResult queued = daemon_.Dispatch({"kill", "2"});
  CommandResult running = daemon_.Dispatch({"kill", "1"});

  EXPECT_EQ(queued.out, "job 2 removed from the queue\n") << queued.err;
  EXPECT_EQ(running.out, "job 1: kill signal sent\n") << running.err;
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(1); }, seconds(15))) << ListFinished();
  EXPECT_NE(RowOf(1).find("killed"), std::string::npos) << RowOf(1);
  EXPECT_NE(RowOf(2).find("killed"), std::string::npos) << RowOf(2);
}

TEST_F(E2eTest, MaxTimeEndsAJobAsTimeout) {
  StartOrFail();

  ASSERT_EQ(daemon_.Dispatch({"new", "--max-time", "1", "--", "sleep", "30"}).exit_code, 0);

  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(1); }, seconds(15))) << ListFinished();
  EXPECT_NE(RowOf(1).find("timeout"), std::string::npos) << RowOf(1);
  ASSERT_TRUE(
      DaemonHarness::WaitFor([&] { return FileHas("output.1.log", "time limit"); }, seconds(5)));
}

TEST_F(E2eTest, MaxLifetimeClampsTheRequestedTime) {
  StartOrFail({"--max-lifetime", "2"});

  CommandResult submit = daemon_.Dispatch({"new", "--max-time", "1h", "--", "sleep", "30"});

  EXPECT_NE(submit.out.find("max time 2s"), std::string::npos) << submit.out;
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(1); }, seconds(15)));
  EXPECT_NE(RowOf(1).find("timeout"), std::string::npos);
}

TEST_F(E2eTest, AttachFollowsLiveOutputUntilTheJobEnds) {
  StartOrFail();
  ASSERT_EQ(daemon_.Dispatch({"new", "--", "sh", "-c", "echo one; sleep 3; echo two"}).exit_code,
            0);

  CommandResult attach = daemon_.Dispatch({"attach", "1"}, seconds(20));

  EXPECT_EQ(attach.exit_code, 0) << attach.err;
  EXPECT_EQ(attach.out, "one\ntwo\n");
}

TEST_F(E2eTest, AttachToAFinishedJobSaysWhereTheLogIs) {
  StartOrFail();
  ASSERT_EQ(daemon_.Dispatch({"new", "--", "true"}).exit_code, 0);
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(1); }, seconds(10)));

  CommandResult attach = daemon_.Dispatch({"attach", "1"});

  EXPECT_NE(attach.err.find("has finished; its output is at " + daemon_.work() + "/output.1.log"),
            std::string::npos)
      << attach.err;
}

TEST_F(E2eTest, OutputGoesWhereAskedOrNowhere) {
  StartOrFail();
  std::filesystem::create_directories(daemon_.work() + "/results");
  std::string results = daemon_.work() + "/results";
  ::chmod(results.c_str(), 0777);

  ASSERT_EQ(daemon_.Dispatch({"new", "--output", "results/run.log", "--", "echo", "a"}).exit_code,
            0);
  ASSERT_EQ(daemon_.Dispatch({"new", "--no-output", "--", "echo", "b"}).exit_code, 0);
  CommandResult bad = daemon_.Dispatch({"new", "--output", "/nonexistent/dir/x.log", "--", "true"});

  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("cannot save output there"), std::string::npos) << bad.err;
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return FileHas("results/run.log", "a"); }, seconds(10)));
  const int no_output_id = 2;
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(no_output_id); }, seconds(10)));
  EXPECT_FALSE(
      std::filesystem::exists(daemon_.work() + "/output." + std::to_string(no_output_id) + ".log"));
}

// What a finished job used, here from the shepherd's wait4 (user mode has
// no cgroups; the guest checks the cgroup figures): two processes burn cpu
// on two cpus and one holds a 64 MiB buffer.
TEST_F(E2eTest, FinishedJobsReportWhatTheyUsed) {
  StartOrFail();
  const std::string burn = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done";
  CommandResult submit =
      daemon_.Dispatch({"new", "--cpu", "2", "--", "sh", "-c",
                        "(" + burn + ") & (" + burn +
                            "); wait; dd if=/dev/zero of=/dev/null bs=64M count=1 2>/dev/null"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(1); }, seconds(60))) << ListFinished();

  CommandResult json = daemon_.Dispatch({"list", "--finished", "--json"});
  Result<protocol::ListReply> reply = protocol::Decode<protocol::ListReply>(json.out);
  ASSERT_TRUE(reply) << json.out;
  ASSERT_EQ(reply->jobs.size(), 1u);
  ASSERT_TRUE(reply->jobs[0].usage) << json.out;
  const protocol::JobUsage& usage = *reply->jobs[0].usage;
  EXPECT_EQ(usage.source, protocol::UsageSource::kRusage);
  const double cpu_s = usage.user_s + usage.system_s;
  EXPECT_GT(cpu_s, 0.1) << json.out;
  EXPECT_GT(usage.wall_s, 0.05) << json.out;
  // Two cpus at most (its affinity), whatever else the machine was doing.
  EXPECT_LE(cpu_s, 2 * usage.wall_s + 0.1) << json.out;
  ASSERT_TRUE(usage.peak_memory_bytes);
  EXPECT_GE(*usage.peak_memory_bytes, std::uint64_t{64} << 20) << json.out;

  std::string table = daemon_.Dispatch({"list", "--finished", "--long"}).out;
  EXPECT_NE(table.find("CPU-TIME"), std::string::npos) << table;
  std::string row = DaemonHarness::RowOfJob(table, 1);
  ASSERT_FALSE(row.empty()) << table;
  EXPECT_EQ(row.back(), 'G') << row;  // PEAK-MEM, the last column
  std::string info = testing::ReadText(daemon_.state() + "/jobs/1/info.json");
  EXPECT_NE(info.find("\"usage\":[{\"source\":\"rusage\""), std::string::npos) << info;
}

// The inspection entry says where the job ran, as the scheduler placed it.
TEST_F(E2eTest, InfoJsonCarriesThePlacement) {
  StartOrFail();
  CommandResult submit = daemon_.Dispatch({"new", "--cpu", "1", "--max-mem", "0.25", "--", "true"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(1); }, seconds(20))) << ListFinished();
  std::string info = testing::ReadText(daemon_.state() + "/jobs/1/info.json");
  EXPECT_NE(info.find("\"placement\":[{\"cpus\":["), std::string::npos) << info;
  EXPECT_NE(info.find("\"mems\":[0]"), std::string::npos) << info;
  EXPECT_NE(info.find("\"gpus\":[]"), std::string::npos) << info;
  EXPECT_NE(info.find("\"spans_nodes\":false"), std::string::npos) << info;
  EXPECT_NE(info.find("\"max_mem_gib\":[0.25]"), std::string::npos) << info;
  EXPECT_NE(info.find("\"exit_code\":[0]"), std::string::npos) << info;
  // The original tool's top-level keys, beside the placement.
  EXPECT_NE(info.find("\"numa_node\":0,"), std::string::npos) << info;
  auto list_after = [&info](const std::string& key) {
    const std::size_t at = info.find(key);
    return at == std::string::npos ? std::string("<none>")
                                   : info.substr(at + key.size(), info.find(']', at + key.size()) -
                                                                      at - key.size() + 1);
  };
  EXPECT_EQ(list_after("}],\"cpus\":"), list_after("\"placement\":[{\"cpus\":")) << info;
  // One cpu, as asked: the list holds a single id.
  const std::size_t cpus = info.find("\"cpus\":[") + 8;
  EXPECT_EQ(info.find(',', cpus), info.find(']', cpus) + 1) << info;
}

TEST_F(E2eTest, ExitCodesAndSpawnFailuresAreReported) {
  StartOrFail();

  ASSERT_EQ(daemon_.Dispatch({"new", "--", "sh", "-c", "exit 7"}).exit_code, 0);
  // A command dispatch cannot find is answered at once, and leaves nothing.
  CommandResult missing = daemon_.Dispatch({"new", "--", "/nonexistent/cmd"});
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  EXPECT_EQ(missing.err,
            "job 2 failed to start: cannot execute /nonexistent/cmd: No such file or directory\n");
  EXPECT_EQ(missing.out, "");
  // One that waits for another is not looked for (the job it waits for may
  // make it); if it is still not there at its start, it fails there.
  ASSERT_EQ(daemon_.Dispatch({"new", "--", "true"}).exit_code, 0);
  CommandResult later = daemon_.Dispatch({"new", "--after", "3", "--", "./made-by-job-3.sh"});
  ASSERT_EQ(later.exit_code, 0) << later.err;

  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(1) && Finished(4); }, seconds(10)))
      << ListFinished();
  EXPECT_EQ(RowOf(1).substr(RowOf(1).size() - 2), " 7") << RowOf(1);
  EXPECT_NE(RowOf(2).find("error"), std::string::npos) << RowOf(2);
  EXPECT_FALSE(std::filesystem::exists(daemon_.work() + "/output.2.log"));
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] { return !std::filesystem::exists(daemon_.state() + "/jobs/2"); }, seconds(10)))
      << "the refused job's directory is left behind";
  EXPECT_NE(RowOf(4).find("error"), std::string::npos) << RowOf(4);
  EXPECT_TRUE(FileHas("output.4.log", "failed to start job"));
}

TEST_F(E2eTest, FifoStrictHoldsTheQueueBehindABlockedHead) {
  StartOrFail({"--schedule", "fifo-strict"});
  ASSERT_EQ(NewSmall({"--", "sleep", "30"}).exit_code, 0);  // 1 cpu
  ASSERT_EQ(NewSmall({"--cpu", "2", "--", "sleep", "30"}).exit_code, 0);

  CommandResult third = NewSmall({"--", "sleep", "30"});

  EXPECT_NE(third.out.find("job 3 queued"), std::string::npos) << third.out;
}

TEST_F(E2eTest, EasyBackfillLetsASmallJobUseTheIdleCpu) {
  StartOrFail({"--schedule", "easy-backfill"});
  ASSERT_EQ(NewSmall({"--", "sleep", "30"}).exit_code, 0);
  ASSERT_EQ(NewSmall({"--cpu", "2", "--", "sleep", "30"}).exit_code, 0);

  CommandResult third = NewSmall({"--", "sleep", "30"});

  EXPECT_NE(third.out.find("job 3 running"), std::string::npos) << third.out;
}

TEST_F(E2eTest, StrictBackfillOnlyAdmitsJobsThatEndBeforeTheHead) {
  StartOrFail({"--schedule", "strict-backfill"});
  ASSERT_EQ(NewSmall({"--max-time", "60", "--", "sleep", "30"}).exit_code, 0);
  ASSERT_EQ(NewSmall({"--cpu", "2", "--", "sleep", "30"}).exit_code, 0);

  CommandResult long_job = NewSmall({"--max-time", "10m", "--", "sleep", "30"});
  CommandResult short_job = NewSmall({"--max-time", "10", "--", "sleep", "1"});

  EXPECT_NE(long_job.out.find("job 3 queued"), std::string::npos) << long_job.out;
  EXPECT_NE(short_job.out.find("job 4 running"), std::string::npos) << short_job.out;
}

TEST_F(E2eTest, ReloadKeepsARunningJobAndItsExitCode) {
  StartOrFail();
  ASSERT_EQ(daemon_.Dispatch({"new", "--", "sh", "-c", DaemonHarness::UntilReleased() + "; exit 5"})
                .exit_code,
            0);
  pid_t before = daemon_.daemon_pid();

  daemon_.Reload();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return daemon_.Dispatch({"list"}).exit_code == 0; },
                                     seconds(10)))
      << daemon_.log();
  EXPECT_EQ(daemon_.daemon_pid(), before);
  EXPECT_FALSE(Finished(1)) << "it was to run across the reload";
  daemon_.Release();
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(1); }, seconds(15)))
      << ListFinished() << daemon_.log();
  EXPECT_EQ(RowOf(1).substr(RowOf(1).size() - 2), " 5") << RowOf(1);
}

// Replies are not bound by the request cap: a list bigger than 1 MiB
// (here 12 jobs with a 100 KB argument each) still arrives whole.
TEST_F(E2eTest, ListLargerThanOneMebibyteArrives) {
  StartOrFail();
  const std::string word(100 * 1000, 'x');
  for (int i = 0; i < 12; ++i) {
    ASSERT_EQ(daemon_.Dispatch({"new", "--no-output", "--", "true", word}).exit_code, 0);
  }
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Finished(12); }, seconds(20)));
  CommandResult list = daemon_.Dispatch({"list", "--finished", "--json"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_GT(list.out.size(), std::size_t{1} << 20);
}

// A role that refuses to start (exit 78) makes the whole daemon exit 78,
// so systemd's RestartPreventExitStatus=78 stops a restart loop.
TEST_F(E2eTest, AnExecutorRefusalIsTheDaemonsExitStatus) {
  std::string empty_sys = daemon_.dir() + "/empty-sys";
  std::filesystem::create_directories(empty_sys);
  (void)daemon_.StartNoProbe({"--sys-root", empty_sys});
  EXPECT_EQ(daemon_.WaitForExit(std::chrono::seconds(10)), 78) << daemon_.log();
  EXPECT_NE(daemon_.log().find("cannot read the cpu/node topology"), std::string::npos)
      << daemon_.log();
}

TEST_F(E2eTest, UnknownJobAndBadFlagsAreClearErrors) {
  StartOrFail();

  CommandResult missing = daemon_.Dispatch({"kill", "99"});
  CommandResult bad_flag = daemon_.Dispatch({"new", "--max-time", "1x", "--", "true"});

  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no such job 99"), std::string::npos) << missing.err;
  EXPECT_EQ(bad_flag.exit_code, 2) << bad_flag.err;
}

TEST_F(E2eTest, OneUserCannotHoldEveryConnection) {
  StartOrFail();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = daemon_.socket();
  ASSERT_LT(path.size(), sizeof addr.sun_path);
  std::copy(path.begin(), path.end(), addr.sun_path);
  int ready[2], hold[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(hold, O_CLOEXEC), 0);
  // A child, as the same user as `dispatch`, opens 64 connections that
  // never send a request (a user hoarding descriptors) and holds them.
  const pid_t hoarder = ::fork();
  ASSERT_GE(hoarder, 0);
  if (hoarder == 0) {
    ::close(ready[0]);
    ::close(hold[1]);
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(daemon_.client_gid()) != 0 ||
                             ::setuid(daemon_.client_uid()) != 0)) {
      ::_exit(1);
    }
    for (int i = 0; i < 64; ++i) {
      int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) ::_exit(2);
    }
    (void)!::write(ready[1], "r", 1);
    char byte;
    (void)!::read(hold[0], &byte, 1);  // returns when the test closes its end
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(hold[0]);
  UniqueFd ready_end(ready[0]), hold_end(hold[1]);
  struct pollfd wait_ready {
    ready_end.get(), POLLIN, 0
  };
  ASSERT_EQ(::poll(&wait_ready, 1, 10000), 1);
  char byte = 0;
  ASSERT_EQ(::read(ready_end.get(), &byte, 1), 1) << "the hoarder could not connect";

  // connect() returns before the broker accepts: once it has taken all 64,
  // the next client of that user must be turned away with a reason.
  CommandResult refused;
  const bool turned_away = DaemonHarness::WaitFor(
      [&] {
        refused = daemon_.Dispatch({"list"});
        return refused.exit_code != 0;
      },
      std::chrono::seconds(5));
  hold_end.reset();
  int status = 0;
  ASSERT_EQ(::waitpid(hoarder, &status, 0), hoarder);
  ASSERT_TRUE(turned_away) << refused.out << daemon_.log();
  EXPECT_NE(refused.err.find("too many open connections from uid"), std::string::npos)
      << refused.err;
  EXPECT_TRUE(DaemonHarness::WaitFor([&] { return daemon_.Dispatch({"list"}).exit_code == 0; },
                                     std::chrono::seconds(5)))
      << daemon_.log();
  EXPECT_NE(daemon_.log().find("connection(s): too many open connections from uid"),
            std::string::npos)
      << daemon_.log();
}

// A delivery that fails keeps the output: it is listed with why, attach
// shows the kept copy, retention does not drop it, a later try (on its own
// or `dispatch output`) delivers it once the cause is fixed, and `--to`
// sends it somewhere new.
TEST_F(E2eTest, OutputThatCannotBeDeliveredIsKeptAndDeliveredLater) {
  StartOrFail({"--keep-finished", "0"});
  const std::string out = daemon_.work() + "/out";
  fs::create_directories(out);
  if (::geteuid() == 0) (void)!::chown(out.c_str(), daemon_.client_uid(), daemon_.client_gid());
  CommandResult submit =
      daemon_.Dispatch({"new", "--max-mem", "0.25", "--output", out, "--", "sh", "-c",
                        DaemonHarness::UntilReleased() + "; echo kept-output"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  ::chmod(out.c_str(), 0555);  // the owner may no longer write there
  daemon_.Release();
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return daemon_.Dispatch({"list", "--finished"}).err.find("could not save output") !=
               std::string::npos;
      },
      seconds(15)))
      << daemon_.log();
  CommandResult listed = daemon_.Dispatch({"list", "--finished"});
  EXPECT_NE(listed.err.find("job 1: could not save output to " + out + "/output.1.log"),
            std::string::npos)
      << listed.err;
  EXPECT_NE(RowOf(1).find(" done "), std::string::npos) << "kept despite --keep-finished 0";
  CommandResult attach = daemon_.Dispatch({"attach", "1"});
  EXPECT_EQ(attach.out, "kept-output\n") << attach.err;
  EXPECT_NE(attach.err.find("here is the copy kept for it"), std::string::npos) << attach.err;
  // Tried again while the place is still closed: which job, and what now.
  CommandResult retried = daemon_.Dispatch({"output", "1"});
  EXPECT_EQ(retried.exit_code, 1);
  EXPECT_TRUE(retried.err.starts_with("dispatch: job 1's output was not delivered: "))
      << retried.err;
  EXPECT_TRUE(retried.err.ends_with(
      "; it is still kept ('dispatch output 1 --to DIR' saves it elsewhere)\n"))
      << retried.err;

  // Never into the state directory: a copy onto the buffer itself would
  // be deleted with it once "delivered".
  CommandResult onto_itself =
      daemon_.Dispatch({"output", "1", "--to", daemon_.state() + "/jobs/1/output"});
  EXPECT_NE(onto_itself.exit_code, 0);
  EXPECT_NE(onto_itself.err.find("inside the daemon's state directory"), std::string::npos)
      << onto_itself.err;
  EXPECT_EQ(daemon_.Dispatch({"attach", "1"}).out, "kept-output\n") << "the kept copy is gone";

  // Sent somewhere new, on request.
  CommandResult moved = daemon_.Dispatch({"output", "1", "--to", daemon_.work()});
  ASSERT_EQ(moved.exit_code, 0) << moved.err << daemon_.log();
  EXPECT_EQ(moved.out, "job 1's output is now at " + daemon_.work() + "/output.1.log\n");
  EXPECT_EQ(daemon_.ReadWorkFile("output.1.log"), "kept-output\n");
  CommandResult again = daemon_.Dispatch({"output", "1"});
  EXPECT_EQ(again.out, "job 1's output is at " + daemon_.work() + "/output.1.log\n") << again.err;

  // A second one is delivered by a later try once the directory is back.
  ::chmod(out.c_str(), 0755);
  // The job waits out the chmod below; a bare echo could finish and be
  // delivered before the directory is closed again.
  ASSERT_EQ(daemon_
                .Dispatch({"new", "--max-mem", "0.25", "--output", out, "--", "sh", "-c",
                           DaemonHarness::UntilReleased("go2") + "; echo two"})
                .exit_code,
            0);
  ::chmod(out.c_str(), 0555);
  daemon_.Release("go2");
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return daemon_.Dispatch({"list", "--finished"}).err.find("job 2: could not save") !=
               std::string::npos;
      },
      seconds(15)));
  ::chmod(out.c_str(), 0755);
  ASSERT_TRUE(
      DaemonHarness::WaitFor([&] { return fs::exists(out + "/output.2.log"); }, seconds(30)))
      << daemon_.log();
  std::ifstream delivered(out + "/output.2.log");
  std::stringstream text;
  text << delivered.rdbuf();
  EXPECT_EQ(text.str(), "two\n");
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return daemon_.Dispatch({"list", "--finished"}).err.find("job 2:") == std::string::npos;
      },
      seconds(10)))
      << "the list still reports the delivered output as missing";
}

}  // namespace
}  // namespace hpcb::e2e

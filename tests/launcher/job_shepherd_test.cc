#include "launcher/job_shepherd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/host/run_record.h"
#include "launcher/child_reap.h"
#include "tests/testing/cpu_affinity.h"
#include "tests/testing/scoped_disposition.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::launcher {
namespace {

using std::chrono::milliseconds;

// Runs one shepherd in this process's child, as this user (no identity
// change), and collects its report and its run record.
class ShepherdTest : public ::testing::Test {
 protected:
  struct Outcome {
    ShepherdReport report;
    int shepherd_status = -1;
    pid_t shepherd_pid = -1;
    pid_t shepherd_session = -1;  // read once it reported, before it is reaped
    Result<host::RunRecord> record = Error(ErrorCode::kInternal, "not read");
    std::string output;
  };

  Outcome Run(std::vector<std::string> argv, std::string cwd, milliseconds deadline) {
    protocol::SpawnRequest request;
    request.id = 7;
    request.argv = std::move(argv);
    request.cwd = std::move(cwd);
    request.env = {"PATH=/usr/bin:/bin"};
    request.placement.cpus = {testing::FirstAllowedCpu()};
    Outcome outcome;
    Result<std::unique_ptr<PreparedJob>> job = PreparedJob::Build(request);
    if (!job) {
      ADD_FAILURE() << job.error().message();
      return outcome;
    }
    const std::string output_path = dir_.path() + "/output";
    UniqueFd buffer(::open(output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    EXPECT_TRUE(buffer.valid());
    ShepherdOptions options;
    options.change_identity = false;
    options.run_dir = dir_.path();
    options.exec_deadline = deadline;
    Result<ShepherdChild> shepherd =
        StartShepherd(request, **job, SpawnFds{buffer.get(), buffer.get(), -1}, options);
    if (!shepherd) {
      ADD_FAILURE() << shepherd.error().message();
      return outcome;
    }
    struct pollfd pfd {
      shepherd->report.get(), POLLIN, 0
    };
    // Bounded: the shepherd's own deadline comes well before this.
    if (::poll(&pfd, 1, static_cast<int>(deadline.count()) + 10000) != 1) {
      ADD_FAILURE() << "the shepherd sent no report in time";
      (void)ReapWithin(shepherd->pid, milliseconds(0), milliseconds(10));
      return outcome;
    }
    EXPECT_EQ(::read(shepherd->report.get(), &outcome.report, sizeof outcome.report),
              static_cast<ssize_t>(sizeof outcome.report));
    outcome.shepherd_pid = shepherd->pid;
    outcome.shepherd_session = ::getsid(shepherd->pid);
    const Reaped reaped = ReapWithin(shepherd->pid, milliseconds(20000), milliseconds(10));
    EXPECT_EQ(reaped.how, Reaped::How::kEnded);
    outcome.shepherd_status = reaped.status;
    outcome.record = host::LoadRunRecord(dir_.path(), request.id);
    outcome.output = testing::ReadText(output_path);
    description_ = DescribeShepherdReport(outcome.report, **job, deadline);
    return outcome;
  }

  testing::TempDir dir_;
  std::string description_;
};

// The lines of /proc/PID/status that say how signals are handled.
std::string SignalLines(const std::string& status) {
  std::string lines;
  std::istringstream in(status);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("SigBlk:", 0) == 0 || line.rfind("SigIgn:", 0) == 0 ||
        line.rfind("SigCgt:", 0) == 0)
      lines += line + "\n";
  }
  return lines;
}

void IgnoreTheSignal(int /*sig*/) {}

// While it lives, this process ignores SIGHUP and SIGINT (as a daemon
// started by nohup or from a script's background job would), catches
// SIGUSR1 and blocks SIGUSR2; all of it is put back after.
class NonDefaultSignals {
 public:
  NonDefaultSignals() {
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    ::sigprocmask(SIG_BLOCK, &usr2, &old_mask_);
  }
  ~NonDefaultSignals() { ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr); }
  NonDefaultSignals(const NonDefaultSignals&) = delete;
  NonDefaultSignals& operator=(const NonDefaultSignals&) = delete;

 private:
  testing::ScopedDisposition hup_{SIGHUP, SIG_IGN};
  testing::ScopedDisposition int_{SIGINT, SIG_IGN};
  testing::ScopedDisposition usr1_{SIGUSR1, IgnoreTheSignal};
  sigset_t old_mask_{};
};

constexpr char kAllDefault[] =
    "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\nSigCgt:\t0000000000000000\n";

// A shepherd leads a session of its own, so a signal to the daemon's
// process group (kill -9 -PGID) does not reach it and it keeps its job's
// exit code for the next start.
TEST_F(ShepherdTest, TheShepherdLeadsASessionOfItsOwn) {
  Outcome outcome = Run({"sleep", "0.3"}, "/", milliseconds(5000));
  EXPECT_EQ(outcome.report.stage, 0);
  ASSERT_GT(outcome.shepherd_pid, 0);
  EXPECT_EQ(outcome.shepherd_session, outcome.shepherd_pid);
  EXPECT_NE(outcome.shepherd_session, ::getsid(0));
}

TEST_F(ShepherdTest, AJobThatExecsIsReportedAndItsEndRecorded) {
  Outcome outcome = Run({"sh", "-c", "echo ran in $PWD; exit 3"}, "/tmp", milliseconds(5000));
  EXPECT_EQ(outcome.report.stage, 0);
  EXPECT_GT(outcome.report.pid, 0);
  EXPECT_EQ(description_, "");
  ASSERT_TRUE(outcome.record) << outcome.record.error().message();
  EXPECT_EQ(outcome.record->pid, outcome.report.pid);
  ASSERT_TRUE(outcome.record->status.has_value());
  EXPECT_TRUE(WIFEXITED(*outcome.record->status));
  EXPECT_EQ(WEXITSTATUS(*outcome.record->status), 3);
  EXPECT_EQ(outcome.output, "ran in /tmp\n");
  EXPECT_TRUE(WIFEXITED(outcome.shepherd_status) && WEXITSTATUS(outcome.shepherd_status) == 0);
}

// The record names the job as the process it is: with its start time,
// which no process that takes its pid after a power cut has (the job's
// own, read by the job from /proc/self/stat).
TEST_F(ShepherdTest, TheRunRecordHoldsTheJobsStartTime) {
  Outcome outcome =
      Run({"sh", "-c", "exec awk '{print $22}' /proc/self/stat"}, "/", milliseconds(5000));
  EXPECT_EQ(outcome.report.stage, 0);
  ASSERT_TRUE(outcome.record) << outcome.record.error().message();
  ASSERT_FALSE(outcome.output.empty());
  EXPECT_EQ(outcome.record->pid_start, std::stoull(outcome.output)) << outcome.output;
  EXPECT_NE(outcome.record->pid_start, 0u);
}

TEST_F(ShepherdTest, AChildThatFailsBeforeExecReportsItsStageAndLeavesNoRecord) {
  Outcome outcome = Run({"true"}, "/nonexistent-hpcb-dir", milliseconds(5000));
  EXPECT_NE(outcome.report.stage, 0);
  EXPECT_EQ(outcome.report.err, ENOENT);
  EXPECT_EQ(description_,
            "failed to start job: cannot enter the working directory /nonexistent-hpcb-dir: " +
                std::string(std::strerror(ENOENT)));
  EXPECT_FALSE(outcome.record);
}

TEST_F(ShepherdTest, AMissingCommandReportsTheExecStage) {
  Outcome outcome = Run({"hpcb-no-such-command"}, "/tmp", milliseconds(5000));
  EXPECT_EQ(outcome.report.err, ENOENT);
  EXPECT_NE(description_.find("cannot execute hpcb-no-such-command"), std::string::npos)
      << description_;
  EXPECT_FALSE(outcome.record);
}

// The job child puts every disposition back to SIG_DFL, the SIGPIPE its
// shepherd ignores too: the job starts with nothing ignored or blocked.
// (SigCgt is zero after any execve; the caught SIGUSR1 is there for the
// moment before it, which no output can show.)
TEST_F(ShepherdTest, AJobStartsWithEverySignalAtItsDefault) {
  NonDefaultSignals changed;
  Outcome outcome = Run({"cat", "/proc/self/status"}, "/tmp", milliseconds(5000));
  EXPECT_EQ(outcome.report.stage, 0) << description_;
  EXPECT_EQ(SignalLines(outcome.output), kAllDefault);
}

// A deadline of zero stands in for a child stopped before exec: the
// shepherd kills it without waiting, reports the timeout and leaves no
// record.
TEST_F(ShepherdTest, AChildPastItsDeadlineIsKilledAndReported) {
  Outcome outcome = Run({"true"}, "/tmp", milliseconds(0));
  EXPECT_EQ(outcome.report.stage, kTimedOutStage);
  EXPECT_GT(outcome.report.pid, 0);
  EXPECT_NE(description_.find("did not reach exec"), std::string::npos) << description_;
  EXPECT_FALSE(outcome.record);
  EXPECT_TRUE(WIFEXITED(outcome.shepherd_status));
}

// The job child execs only once its shepherd has recorded it (the go
// byte). A shepherd that dies first takes the child with it, even while
// someone else still holds the go pipe open: the job never runs, so the
// record's "never forked" is true and recovery may start it again.
TEST(JobHandshakeTest, AChildWhoseShepherdDiesBeforeItsGoByteNeverRuns) {
  testing::TempDir dir;
  const std::string marker = dir.path() + "/ran";
  protocol::SpawnRequest request;
  request.id = 9;
  request.argv = {"sh", "-c", "touch " + marker};
  request.cwd = "/tmp";
  request.env = {"PATH=/usr/bin:/bin"};
  request.placement.cpus = {testing::FirstAllowedCpu()};
  Result<std::unique_ptr<PreparedJob>> job = PreparedJob::Build(request);
  ASSERT_TRUE(job) << job.error().message();
  int go[2];
  int told[2];
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(told, O_CLOEXEC), 0);
  UniqueFd go_read(go[0]), go_write(go[1]), told_read(told[0]), told_write(told[1]);
  UniqueFd sink(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  const pid_t shepherd = ::fork();
  ASSERT_GE(shepherd, 0);
  if (shepherd == 0) {
    const pid_t me = ::getpid();
    const pid_t child = ::fork();
    if (child == 0) {
      int report[2];
      if (::pipe2(report, O_CLOEXEC) != 0) ::_exit(2);
      (*job)->Exec(SpawnFds{sink.get(), sink.get(), -1}, report[1], false,
                   JobHandshake{go_read.get(), me});
    }
    (void)!::write(told_write.get(), &child, sizeof child);
    ::_exit(0);  // dies without the go byte, as a killed shepherd would
  }
  told_write.reset();
  pid_t child = 0;
  ASSERT_EQ(::read(told_read.get(), &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ASSERT_EQ(::waitpid(shepherd, nullptr, 0), shepherd);
  // Re-parented to init, which reaps it (when it gets to it) once the
  // death signal lands: a zombie counts as gone.
  const bool gone = [&] {
    for (int i = 0; i < 500; ++i) {
      const std::string stat = testing::ReadText("/proc/" + std::to_string(child) + "/stat");
      const std::size_t close = stat.rfind(')');
      if (close == std::string::npos || stat.compare(close, 3, ") Z") == 0) return true;
      ::usleep(10000);
    }
    return false;
  }();
  EXPECT_TRUE(gone) << "the job child outlived its shepherd";
  // Too late: nothing is left to take it.
  (void)!::write(go_write.get(), "g", 1);
  ::usleep(200000);
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "the job ran without being recorded";
  if (!gone) (void)::kill(child, SIGKILL);
}

}  // namespace
}  // namespace hpcb::launcher

// `dispatch new --notify CMD` with the real daemon and client: the command
// runs when the job ends, after its output is delivered, in the submit
// folder, with the job's id, state and exit code in its environment; one
// that hangs is killed (its whole process group) after 10 s, and the next
// one of the same user runs after it, not beside it.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/daemon_harness.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::e2e {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

// Writes its environment to notified.ID (through a temporary, so that a
// file seen is whole), what it found of the job's output to seen.ID, and
// its session and pid to session.ID.
constexpr const char* kRecordHook =
    "id=$HPC_BATCH_JOB_ID; cat output.$id.log > seen.$id 2>&1; "
    "echo \"$(cut -d' ' -f6 /proc/$$/stat) $$\" > session.$id; env > .n.$id && mv .n.$id "
    "notified.$id";

class NotifyE2eTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(daemon_.Start()) << daemon_.log(); }

  int Submit(const std::vector<std::string>& args) {
    std::vector<std::string> full = {"new", "--max-mem", "0.25"};
    full.insert(full.end(), args.begin(), args.end());
    CommandResult submit = daemon_.Dispatch(full);
    EXPECT_EQ(submit.exit_code, 0) << submit.out << submit.err << daemon_.log();
    return DaemonHarness::JobIdIn(submit.out);
  }
  std::string Work(const std::string& name) const { return daemon_.work() + "/" + name; }
  // The variables the hook of job `id` saw; empty if it did not run within
  // `timeout`.
  std::map<std::string, std::string> EnvOfHook(int id, seconds timeout = seconds(20)) {
    const std::string path = Work("notified." + std::to_string(id));
    std::map<std::string, std::string> env;
    if (!DaemonHarness::WaitFor([&] { return fs::exists(path); }, timeout)) return env;
    std::istringstream lines(testing::ReadText(path));
    std::string line;
    while (std::getline(lines, line)) {
      const std::size_t eq = line.find('=');
      if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return env;
  }
  double ReadSeconds(const std::string& name) {
    return std::atof(daemon_.ReadWorkFile(name).c_str());
  }

  DaemonHarness daemon_;
};

TEST_F(NotifyE2eTest, TheHookSeesHowTheJobEndedAndItsDeliveredOutput) {
  const int failed = Submit({"--notify", kRecordHook, "--", "sh", "-c", "echo hello; exit 3"});
  const int done = Submit({"--notify", kRecordHook, "--", "true"});
  ASSERT_GT(failed, 0);
  ASSERT_GT(done, 0);

  std::map<std::string, std::string> env = EnvOfHook(failed);
  ASSERT_FALSE(env.empty()) << daemon_.log();
  EXPECT_EQ(env["HPC_BATCH_JOB_ID"], std::to_string(failed));
  EXPECT_EQ(env["HPC_BATCH_JOB_STATE"], "failed");
  EXPECT_EQ(env["HPC_BATCH_EXIT_CODE"], "3");
  EXPECT_EQ(env["PWD"], daemon_.work()) << "it runs in the submit folder";
  EXPECT_FALSE(env["PATH"].empty());
  EXPECT_FALSE(env["HOME"].empty());
  EXPECT_EQ(env.count("HPC_BATCH_ARRAY_INDEX"), 0u);
  EXPECT_EQ(daemon_.ReadWorkFile("seen." + std::to_string(failed)), "hello\n")
      << "it runs once the output is delivered";
  // A session of its own: no terminal the daemon was started from is its.
  std::istringstream session(daemon_.ReadWorkFile("session." + std::to_string(failed)));
  std::string sid, pid;
  session >> sid >> pid;
  EXPECT_FALSE(sid.empty());
  EXPECT_EQ(sid, pid) << "the command's shell does not lead a session of its own";
  env = EnvOfHook(done);
  EXPECT_EQ(env["HPC_BATCH_JOB_STATE"], "done") << daemon_.log();
  EXPECT_EQ(env["HPC_BATCH_EXIT_CODE"], "0");
}

TEST_F(NotifyE2eTest, KilledTimedOutAndArrayJobsSayWhichTheyWere) {
  const int killed = Submit({"--notify", kRecordHook, "--", "sleep", "60"});
  const int late = Submit({"--notify", kRecordHook, "--max-time", "1", "--", "sleep", "60"});
  ASSERT_GT(late, 0);
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return DaemonHarness::RowOfJob(daemon_.Dispatch({"list", "--finished"}).out, killed)
                   .find(" running ") != std::string::npos;
      },
      seconds(15)));
  CommandResult kill = daemon_.Dispatch({"kill", std::to_string(killed)});
  ASSERT_EQ(kill.exit_code, 0) << kill.err;

  EXPECT_EQ(EnvOfHook(killed)["HPC_BATCH_JOB_STATE"], "killed") << daemon_.log();
  EXPECT_EQ(EnvOfHook(late)["HPC_BATCH_JOB_STATE"], "timeout") << daemon_.log();

  CommandResult array = daemon_.Dispatch({"new", "--max-mem", "0.25", "--array", "4-5", "--notify",
                                          "env > \".a.$HPC_BATCH_ARRAY_INDEX\" && mv "
                                          "\".a.$HPC_BATCH_ARRAY_INDEX\" a.$HPC_BATCH_ARRAY_INDEX",
                                          "--", "true"});
  ASSERT_EQ(array.exit_code, 0) << array.err;
  for (const char* index : {"a.4", "a.5"}) {
    ASSERT_TRUE(DaemonHarness::WaitFor([&] { return fs::exists(Work(index)); }, seconds(20)))
        << index << "\n"
        << daemon_.log();
    EXPECT_NE(daemon_.ReadWorkFile(index).find(std::string("HPC_BATCH_ARRAY_INDEX=") + (index + 2)),
              std::string::npos);
  }
}

TEST_F(NotifyE2eTest, AHangingHookIsKilledAfterTenSecondsAndTheNextOneRunsAfterIt) {
  // The hook leaves a process in the background and waits for it: both
  // are in its process group, which goes whole.
  const int hung = Submit({"--notify",
                           "date +%s.%N > hung.start; sleep 60 & echo $! > hung.pid; "
                           "wait; echo not-killed > hung.end",
                           "--", "true"});
  ASSERT_GT(hung, 0);
  // Read once its time is in it: `date > FILE` makes the file before it
  // writes the line.
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return ReadSeconds("hung.start") > 0; }, seconds(20)))
      << daemon_.log();
  const int next = Submit({"--notify", "date +%s.%N > next.start", "--", "true"});
  ASSERT_GT(next, 0);

  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return ReadSeconds("next.start") > 0; }, seconds(30)))
      << daemon_.log();
  const double waited = ReadSeconds("next.start") - ReadSeconds("hung.start");
  EXPECT_GE(waited, 9.5) << "the user's next hook ran beside the hanging one";
  EXPECT_LE(waited, 17.0) << "the hanging hook was not stopped at 10 s";
  EXPECT_FALSE(fs::exists(Work("hung.end")));
  const int background = std::atoi(daemon_.ReadWorkFile("hung.pid").c_str());
  ASSERT_GT(background, 0);
  // Gone, or a zombie left for whoever inherited it.
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] {
        const std::string stat = "/proc/" + std::to_string(background) + "/stat";
        return !fs::exists(stat) || testing::ReadText(stat).find(") Z ") != std::string::npos;
      },
      seconds(5)))
      << "the hook's background sleep outlived it";
  EXPECT_NE(daemon_.log().find("job " + std::to_string(hung) +
                               ": its --notify command was killed after 10 s"),
            std::string::npos)
      << daemon_.log();
}

TEST_F(NotifyE2eTest, ACommandTooLongIsRefusedBeforeSubmitting) {
  CommandResult refused =
      daemon_.Dispatch({"new", "--notify", std::string(5000, 'x'), "--", "true"});

  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("--notify's command must be 1 to 4096 bytes"), std::string::npos)
      << refused.err;
  EXPECT_EQ(daemon_.Dispatch({"list", "--finished"}).out.find("true"), std::string::npos);
}

}  // namespace
}  // namespace hpcb::e2e

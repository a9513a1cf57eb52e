// End to end: `dispatch wait`, `new --wait`, dependencies (`--after`,
// `--after-any`) across a daemon restart, `drain`/`resume` across a
// reload, holds, job names (`--name`), `info` and the --json of every
// read command.
#include <grp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/daemon_harness.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::e2e {
namespace {

using std::chrono::seconds;

class WorkflowE2eTest : public ::testing::Test {
 protected:
  void StartOrFail(std::vector<std::string> extra = {}) {
    ASSERT_TRUE(daemon_.Start(extra)) << daemon_.log();
  }
  // The client's own primary group as --admin-group: it may drain.
  std::vector<std::string> ClientIsAdmin() {
    struct group* entry = ::getgrgid(daemon_.client_gid());
    return {"--admin-group", entry != nullptr ? entry->gr_name : "?"};
  }
  // `dispatch new` with a small budget, so the host's memory does not
  // decide what runs; prints "job N ...".
  int New(std::vector<std::string> args) {
    args.insert(args.begin(), {"new", "--max-mem", "0.25"});
    CommandResult result = daemon_.Dispatch(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return DaemonHarness::JobIdIn(result.out);
  }
  std::string RowOf(int id) {
    return DaemonHarness::RowOfJob(daemon_.Dispatch({"list", "--finished"}).out, id);
  }
  CommandResult Wait(std::vector<std::string> args) {
    args.insert(args.begin(), "wait");
    return daemon_.Dispatch(args, seconds(40));
  }
  DaemonHarness daemon_;
};

TEST_F(WorkflowE2eTest, WaitExitsWithTheJobsCodeOrOneOr124) {
  StartOrFail();
  const int fails = New({"--", "sh", "-c", "sleep 1; exit 3"});
  const int works = New({"--", "true"});

  CommandResult one = Wait({std::to_string(fails)});
  CommandResult both = Wait({std::to_string(works), std::to_string(fails)});
  const int sleeper = New({"--", "sleep", "30"});
  CommandResult timed_out = Wait({"--timeout", "1", std::to_string(sleeper)});

  EXPECT_EQ(one.exit_code, 3) << one.err;
  EXPECT_NE(one.err.find("job " + std::to_string(fails) + " finished: exit 3"), std::string::npos)
      << one.err;
  EXPECT_EQ(both.exit_code, 1) << both.err;
  EXPECT_EQ(Wait({std::to_string(works)}).exit_code, 0);
  EXPECT_EQ(timed_out.exit_code, 124) << timed_out.err;
  EXPECT_NE(timed_out.err.find("--timeout reached"), std::string::npos) << timed_out.err;
  CommandResult unknown = Wait({"99"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("no such job 99"), std::string::npos) << unknown.err;
}

TEST_F(WorkflowE2eTest, NewWaitStreamsTheOutputAndExitsWithTheJobsStatus) {
  StartOrFail();

  CommandResult run = daemon_.Dispatch(
      {"new", "--max-mem", "0.25", "--wait", "--", "sh", "-c", "echo from-the-job; exit 4"},
      seconds(30));

  EXPECT_EQ(run.exit_code, 4) << run.err << daemon_.log();
  EXPECT_EQ(run.out, "from-the-job\n") << "stdout holds the job's output alone";
  EXPECT_NE(run.err.find("job 1 "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("job 1 finished: exit 4\n"), std::string::npos) << run.err;
  EXPECT_EQ(
      daemon_.Dispatch({"new", "--max-mem", "0.25", "--wait", "--", "true"}, seconds(30)).exit_code,
      0);
}

// A job that never runs has a destination it never writes: `new --wait`
// must not print what an earlier run left there as this job's output.
TEST_F(WorkflowE2eTest, NewWaitOfAJobThatNeverRanPrintsNoStaleOutput) {
  StartOrFail();
  const std::string stale = daemon_.work() + "/result.txt";
  {
    std::FILE* file = std::fopen(stale.c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fputs("from an earlier run\n", file);
    std::fclose(file);
  }
  const int failing = New({"--", "sh", "-c", "sleep 1; exit 2"});

  CommandResult run = daemon_.Dispatch({"new", "--max-mem", "0.25", "--wait", "--output", stale,
                                        "--after", std::to_string(failing), "--", "echo", "never"},
                                       seconds(30));

  EXPECT_EQ(run.exit_code, 1) << run.err << daemon_.log();
  EXPECT_EQ(run.out, "") << "the stale file is not this job's output";
  EXPECT_NE(run.err.find("did not run"), std::string::npos) << run.err;
}

TEST_F(WorkflowE2eTest, ADependencyChainHoldsAcrossARestart) {
  StartOrFail();
  // The second job fails if it starts before the first one has ended.
  const int first =
      New({"--", "sh", "-c", DaemonHarness::UntilReleased() + "; sleep 0.5; touch first.done"});
  const int second = New({"--after", std::to_string(first), "--", "sh", "-c",
                          "test -f first.done && echo second ran"});
  const int failing = New({"--", "sh", "-c", "exit 2"});
  const int never = New({"--after", std::to_string(failing), "--", "echo", "never"});
  const int cascade = New({"--after", std::to_string(never), "--", "echo", "never"});
  const int anyway = New({"--after-any", std::to_string(failing), "--", "echo", "anyway"});
  const std::string queued_row = DaemonHarness::RowOfJob(daemon_.Dispatch({"list"}).out, second);
  EXPECT_NE(queued_row.find("after " + std::to_string(first)), std::string::npos) << queued_row;

  daemon_.Stop();
  StartOrFail();
  const std::string after_restart = DaemonHarness::RowOfJob(daemon_.Dispatch({"list"}).out, second);
  EXPECT_NE(after_restart.find("after " + std::to_string(first)), std::string::npos)
      << after_restart;
  daemon_.Release();

  CommandResult chain = Wait({std::to_string(second)});
  EXPECT_EQ(chain.exit_code, 0) << chain.err << daemon_.log();
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return daemon_.ReadWorkFile("output." + std::to_string(second) + ".log") == "second ran\n";
      },
      std::chrono::seconds(10)));
  EXPECT_EQ(Wait({std::to_string(never), std::to_string(cascade)}).exit_code, 1);
  for (int id : {never, cascade}) {
    const std::string row = RowOf(id);
    EXPECT_NE(row.find(" dependency"), std::string::npos) << row;
  }
  EXPECT_EQ(Wait({std::to_string(anyway)}).exit_code, 0);
  CommandResult doomed = daemon_.Dispatch(
      {"new", "--wait", "--after", std::to_string(failing), "--", "echo", "never"}, seconds(30));
  EXPECT_EQ(doomed.exit_code, 1);
  EXPECT_NE(
      doomed.err.find("job " + std::to_string(failing) + " failed (exit 2), so it did not run"),
      std::string::npos)
      << doomed.err;
  CommandResult refused = daemon_.Dispatch({"new", "--after", "77", "--", "true"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("--after: no such job 77"), std::string::npos) << refused.err;
  CommandResult bad = daemon_.Dispatch({"new", "--after", "1,x", "--", "true"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("'x' is not a job id"), std::string::npos) << bad.err;
}

// `dispatch wait` keeps asking while the daemon restarts under it.
TEST_F(WorkflowE2eTest, WaitRidesOutADaemonRestart) {
  StartOrFail();
  const int job = New({"--", "sh", "-c", DaemonHarness::UntilReleased() + "; exit 6"});
  CommandResult waited;
  std::thread waiter([&] { waited = Wait({std::to_string(job)}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));

  daemon_.Stop();
  const bool restarted = daemon_.Start();
  daemon_.Release();
  waiter.join();

  ASSERT_TRUE(restarted) << daemon_.log();
  EXPECT_EQ(waited.exit_code, 6) << waited.err << daemon_.log();
}

// Under fifo-strict a job that does not fit holds back everything behind
// it; a job waiting for a dependency must not, even one that cannot fit
// now (an exclusive job fits only on an idle machine).
TEST_F(WorkflowE2eTest, AWaitingDependentNeverHoldsTheHeadUnderFifoStrict) {
  StartOrFail({"--schedule", "fifo-strict"});
  const int first = New({"--", "sleep", "30"});
  const int waiting = New({"--exclusive", "--after", std::to_string(first), "--", "true"});

  CommandResult behind = daemon_.Dispatch({"new", "--max-mem", "0.25", "--", "sleep", "30"});

  EXPECT_NE(behind.out.find("job " + std::to_string(waiting + 1) + " running"), std::string::npos)
      << behind.out;
  CommandResult info = daemon_.Dispatch({"info"});
  EXPECT_NE(info.out.find("1 queued (1 waiting for dependencies), 2 running"), std::string::npos)
      << info.out;
}

TEST_F(WorkflowE2eTest, DrainHoldsTheQueueAcrossAReloadUntilResume) {
  StartOrFail(ClientIsAdmin());
  const int running = New({"--", "sleep", "2"});
  CommandResult drain = daemon_.Dispatch({"drain"});
  ASSERT_EQ(drain.exit_code, 0) << drain.err;
  const int held = New({"--", "echo", "held"});

  daemon_.Reload();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return daemon_.Dispatch({"list"}).exit_code == 0; },
                                     seconds(10)))
      << daemon_.log();

  EXPECT_EQ(Wait({std::to_string(running)}).exit_code, 0) << "running jobs finish";
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_NE(DaemonHarness::RowOfJob(daemon_.Dispatch({"list"}).out, held), "")
      << "still queued after the reload";
  EXPECT_NE(daemon_.Dispatch({"list"}).out.find("draining"), std::string::npos);
  EXPECT_NE(daemon_.Dispatch({"info"}).out.find("draining"), std::string::npos);
  EXPECT_EQ(daemon_.Dispatch({"drain"}).out, "already draining\n");
  ASSERT_EQ(daemon_.Dispatch({"resume"}).exit_code, 0);
  EXPECT_EQ(Wait({std::to_string(held)}).exit_code, 0);
  EXPECT_EQ(daemon_.Dispatch({"info"}).out.find("draining"), std::string::npos);
}

// `dispatch hold`: a held job keeps its place but every policy passes it
// by, across a reload, until it is released; only a queued job is held.
TEST_F(WorkflowE2eTest, AHeldJobIsPassedByAcrossAReloadAndRunsOnceReleased) {
  StartOrFail({"--schedule", "fifo-strict"});
  const int blocker = New({"--exclusive", "--", "sh", "-c", DaemonHarness::UntilReleased()});
  const int held = New({"--", "echo", "first"});
  const int next = New({"--", "echo", "second"});
  const std::string held_id = std::to_string(held);

  CommandResult hold = daemon_.Dispatch({"hold", held_id});
  EXPECT_EQ(hold.exit_code, 0) << hold.err;
  EXPECT_EQ(hold.out, "job " + held_id + " held\n");
  EXPECT_EQ(daemon_.Dispatch({"hold", held_id}).out, "job " + held_id + " was already held\n");
  CommandResult running = daemon_.Dispatch({"hold", std::to_string(blocker)});
  EXPECT_EQ(running.exit_code, 1);
  EXPECT_EQ(running.err, "dispatch: job " + std::to_string(blocker) +
                             " is running; only a queued job can be held or released\n");
  EXPECT_NE(DaemonHarness::RowOfJob(daemon_.Dispatch({"list"}).out, held).find(" held "),
            std::string::npos)
      << daemon_.Dispatch({"list"}).out;
  EXPECT_NE(daemon_.Dispatch({"list", "--json"}).out.find("\"held\":true"), std::string::npos);

  // Under fifo-strict the next job would wait behind the first; held, the
  // first is passed by.
  daemon_.Release();
  EXPECT_EQ(Wait({std::to_string(next)}).exit_code, 0) << daemon_.log();
  daemon_.Reload();
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return daemon_.Dispatch({"list"}).exit_code == 0; },
                                     seconds(10)))
      << daemon_.log();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_NE(DaemonHarness::RowOfJob(daemon_.Dispatch({"list"}).out, held).find(" held "),
            std::string::npos)
      << "still held after the reload\n"
      << daemon_.Dispatch({"list"}).out;

  CommandResult release = daemon_.Dispatch({"release", held_id});
  EXPECT_EQ(release.out, "job " + held_id + " released\n") << release.err;
  EXPECT_EQ(Wait({held_id}).exit_code, 0) << daemon_.log();
  CommandResult again = daemon_.Dispatch({"release", held_id});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.err, "dispatch: job " + held_id +
                           " has finished; only a queued job can be held or released\n");
}

// `new --name`: a NAME column in list (only when a job has a name), "name"
// in --json and in info.json, kept across a restart; kill, wait and attach
// --name act on the caller's jobs with that name.
TEST_F(WorkflowE2eTest, NamedJobsAreListedAndKilledWaitedForAndAttachedByName) {
  StartOrFail();
  const int prep = New({"--name", "prep.1", "--", "sh", "-c", "echo prepped; exit 4"});
  CommandResult waited = Wait({"--name", "prep.1"});
  EXPECT_EQ(waited.exit_code, 4) << waited.err;
  // Two running on this host's 2 cpus, the third queued.
  const int first = New({"--name", "train", "--", "sleep", "30"});
  const int second = New({"--name", "train", "--", "sleep", "30"});
  const int unnamed = New({"--", "sleep", "30"});
  const std::string trains = std::to_string(first) + ", " + std::to_string(second);

  const std::string list = daemon_.Dispatch({"list"}).out;
  EXPECT_EQ(list.rfind("USER", 0), 0u) << list;
  EXPECT_NE(list.substr(0, list.find('\n')).find("  NAME   COMMAND"), std::string::npos) << list;
  EXPECT_NE(DaemonHarness::RowOfJob(list, first).find("  train  sleep 30"), std::string::npos);
  EXPECT_NE(DaemonHarness::RowOfJob(list, unnamed).find("  -      sleep 30"), std::string::npos)
      << list;
  EXPECT_NE(daemon_.Dispatch({"list", "--json"}).out.find("\"name\":[\"train\"]"),
            std::string::npos);
  const std::string info =
      testing::ReadText(daemon_.state() + "/jobs/" + std::to_string(prep) + "/info.json");
  EXPECT_NE(info.find("\"name\":[\"prep.1\"]"), std::string::npos) << info;
  CommandResult attach = daemon_.Dispatch({"attach", "--name", "train"});
  EXPECT_EQ(attach.exit_code, 1);
  EXPECT_EQ(attach.err, "dispatch: 2 jobs of yours named 'train' are queued or running (" + trains +
                            "); attach follows one: name it by id\n");

  daemon_.Stop();
  StartOrFail();
  EXPECT_NE(DaemonHarness::RowOfJob(daemon_.Dispatch({"list"}).out, second).find("  train  "),
            std::string::npos)
      << "named after the restart\n"
      << daemon_.Dispatch({"list"}).out;
  CommandResult kill = daemon_.Dispatch({"kill", "--name", "train"});
  EXPECT_EQ(kill.exit_code, 0) << kill.err;
  EXPECT_EQ(kill.out, "job " + std::to_string(first) + ": kill signal sent\njob " +
                          std::to_string(second) + ": kill signal sent\n");
  CommandResult killed = Wait({"--name", "train"});
  EXPECT_EQ(killed.exit_code, 1) << killed.err;
  EXPECT_NE(killed.err.find("job " + std::to_string(second) + " finished: killed"),
            std::string::npos)
      << killed.err;
  CommandResult again = daemon_.Dispatch({"kill", "--name", "train"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.err,
            "dispatch: every job of yours named 'train' has finished (" + trains + ")\n");
  CommandResult none = daemon_.Dispatch({"kill", "--name", "nosuch"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "dispatch: no job of yours is named 'nosuch'\n");
  EXPECT_EQ(daemon_.Dispatch({"kill", std::to_string(unnamed)}).exit_code, 0);
}

TEST_F(WorkflowE2eTest, InfoAndEveryReadCommandSpeakJson) {
  StartOrFail({"--schedule", "easy-backfill"});
  const int job = New({"--max-time", "10m", "--", "sleep", "20"});

  CommandResult info = daemon_.Dispatch({"info"});
  CommandResult info_json = daemon_.Dispatch({"info", "--json"});
  CommandResult list_json = daemon_.Dispatch({"list", "--json"});
  CommandResult field_json =
      daemon_.Dispatch({"job", std::to_string(job), "max-time", "get", "--json"});
  CommandResult drain = daemon_.Dispatch({"drain"});

  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("policy easy-backfill, 0 queued, 1 running"), std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("\nNODE  RESOURCE  TOTAL"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("\n0     cpus "), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("\nall   mem "), std::string::npos) << "--no-cgroups: machine-wide\n"
                                                              << info.out;
  EXPECT_EQ(info_json.out.rfind(R"({"ok":true,"policy":"easy-backfill","draining":false,)", 0), 0u)
      << info_json.out;
  EXPECT_NE(info_json.out.find(R"("in_use":1,)"), std::string::npos) << info_json.out;
  EXPECT_NE(list_json.out.find(R"("draining":false)"), std::string::npos) << list_json.out;
  EXPECT_EQ(field_json.out, "{\"ok\":true,\"value\":600,\"before\":[]}\n") << field_json.err;
  EXPECT_EQ(drain.exit_code, 1) << "only admins drain";
  EXPECT_NE(drain.err.find("'drain' requires membership of group"), std::string::npos) << drain.err;
}

}  // namespace
}  // namespace hpcb::e2e

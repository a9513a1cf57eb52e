// End to end: job arrays (`dispatch new --array`): each element runs with
// its index in HPC_BATCH_ARRAY_INDEX and writes output.ARRAY_INDEX.log;
// list folds an array, --long shows its elements; kill, wait, hold,
// attach and --after take the array's id or an element's ARRAY_INDEX; the
// queued part of an array outlives a restart, and the loss of the queue
// file; the per-user cap counts elements.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/daemon_harness.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::e2e {
namespace {

using std::chrono::seconds;

class ArrayE2eTest : public ::testing::Test {
 protected:
  void StartOrFail(std::vector<std::string> extra = {}) {
    ASSERT_TRUE(daemon_.Start(extra)) << daemon_.log();
  }
  CommandResult Dispatch(std::vector<std::string> args) {
    return daemon_.Dispatch(args, seconds(40));
  }
  // `dispatch new` with a small budget; the id it printed ("job N" or
  // "array N"), -1 if none.
  int Submit(std::vector<std::string> args) {
    args.insert(args.begin(), {"new", "--max-mem", "0.25"});
    CommandResult result = Dispatch(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    std::smatch match;
    if (std::regex_search(result.out, match, std::regex("(job|array) ([0-9]+) "))) {
      return std::stoi(match[2]);
    }
    return -1;
  }
  // The row of list's output whose ID column is `id` as text ("12_[1-3]").
  static std::string RowWithId(const std::string& list, const std::string& id) {
    std::regex row("(^|\n)([^\n]*\\S+  " +
                   std::regex_replace(id, std::regex(R"([\[\]])"), R"(\$&)") + "  [^\n]*)");
    std::smatch match;
    return std::regex_search(list, match, row) ? match[2].str() : "";
  }
  DaemonHarness daemon_;
};

TEST_F(ArrayE2eTest, ElementsRunWithTheirIndexWriteTheirOwnOutputAndFoldInList) {
  StartOrFail();
  CommandResult submitted = Dispatch(
      {"new", "--max-mem", "0.25", "--array", "1-5:2,10%2", "--output", daemon_.work(), "--", "sh",
       "-c", "echo index=$HPC_BATCH_ARRAY_INDEX; " + DaemonHarness::UntilReleased() + "; sleep 1"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(submitted.out, match, std::regex("^array ([0-9]+) of 4 jobs ")))
      << submitted.out;
  const std::string array = match[1];
  EXPECT_NE(submitted.out.find(daemon_.work() + "/output." + array + "_INDEX.log"),
            std::string::npos)
      << submitted.out;

  const std::string folded = Dispatch({"list"}).out;
  EXPECT_NE(RowWithId(folded, array + "_[1,3,5,10]"), "") << folded;
  const std::string expanded = Dispatch({"list", "--long"}).out;
  for (const char* index : {"1", "3", "5", "10"}) {
    EXPECT_NE(RowWithId(expanded, array + "_" + index), "") << expanded;
  }
  daemon_.Release();
  // %2: never more than two elements running, whatever the policy.
  for (int i = 0; i < 5; ++i) {
    const std::string json = Dispatch({"list", "--json"}).out;
    std::size_t running = 0;
    for (std::size_t at = json.find("\"state\":\"running\""); at != std::string::npos;
         at = json.find("\"state\":\"running\"", at + 1)) {
      ++running;
    }
    EXPECT_LE(running, 2u) << json;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }

  CommandResult waited = Dispatch({"wait", array});
  EXPECT_EQ(waited.exit_code, 0) << waited.err << daemon_.log();
  EXPECT_NE(waited.err.find("job " + array + "_10 finished: exit 0"), std::string::npos)
      << waited.err;
  for (const char* index : {"1", "3", "5", "10"}) {
    EXPECT_EQ(testing::ReadText(daemon_.work() + "/output." + array + "_" + index + ".log"),
              std::string("index=") + index + "\n");
  }
  const std::string finished = Dispatch({"list", "--finished"}).out;
  EXPECT_NE(RowWithId(finished, array + "_[1,3,5,10]").find("4 done"), std::string::npos)
      << finished;
  EXPECT_NE(Dispatch({"list", "--json", "--finished"}).out.find("\"array_index\":[10]"),
            std::string::npos);
}

TEST_F(ArrayE2eTest, HoldKillAndAfterTakeTheArrayOrOneElement) {
  StartOrFail();
  const int sleeper = Submit({"--", "sleep", "30"});
  const std::string array = std::to_string(
      Submit({"--array", "1-3", "--after", std::to_string(sleeper), "--no-output", "--", "true"}));
  const int dependent = Submit({"--after", array, "--no-output", "--", "true"});

  EXPECT_EQ(Dispatch({"hold", array + "_2"}).exit_code, 0);
  EXPECT_NE(RowWithId(Dispatch({"list"}).out, array + "_[1-3]").find("2 queued, 1 held"),
            std::string::npos)
      << Dispatch({"list"}).out;
  CommandResult held = Dispatch({"hold", array});
  EXPECT_EQ(held.exit_code, 0) << held.err;
  EXPECT_NE(RowWithId(Dispatch({"list"}).out, array + "_[1-3]").find("3 held"), std::string::npos)
      << Dispatch({"list"}).out;
  EXPECT_EQ(Dispatch({"release", array}).exit_code, 0);

  CommandResult one = Dispatch({"kill", array + "_3"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("removed from the queue"), std::string::npos) << one.out;
  CommandResult unknown = Dispatch({"kill", array + "_7"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.err, "dispatch: no such job " + array + "_7\n");
  CommandResult all = Dispatch({"kill", array});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, "job " + array + " removed from the queue\n");
  CommandResult again = Dispatch({"kill", array});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.err, "dispatch: job " + array + " already finished\n");

  // Every element was killed, so a job after the array never runs.
  CommandResult waited = Dispatch({"wait", std::to_string(dependent)});
  EXPECT_EQ(waited.exit_code, 1) << waited.err;
  EXPECT_NE(waited.err.find("did not run"), std::string::npos) << waited.err;
  EXPECT_EQ(Dispatch({"kill", std::to_string(sleeper)}).exit_code, 0);
}

TEST_F(ArrayE2eTest, AQueuedArrayOutlivesARestartAndThenRuns) {
  StartOrFail();
  const int sleeper = Submit({"--", "sh", "-c", DaemonHarness::UntilReleased()});
  const std::string array =
      std::to_string(Submit({"--array", "0-2", "--after", std::to_string(sleeper), "--output",
                             daemon_.work(), "--", "sh", "-c", "echo i=$HPC_BATCH_ARRAY_INDEX"}));

  daemon_.Stop();
  StartOrFail();
  EXPECT_NE(RowWithId(Dispatch({"list"}).out, array + "_[0-2]").find("3 queued"), std::string::npos)
      << "queued after the restart\n"
      << Dispatch({"list"}).out << daemon_.log();
  daemon_.Release();
  CommandResult waited = Dispatch({"wait", array});
  EXPECT_EQ(waited.exit_code, 0) << waited.err << daemon_.log();
  for (const char* index : {"0", "1", "2"}) {
    EXPECT_EQ(testing::ReadText(daemon_.work() + "/output." + array + "_" + index + ".log"),
              std::string("i=") + index + "\n");
  }
}

// --after ARRAY_INDEX waits for that element, --after ARRAY for every
// element (as Slurm's afterok on an array's id), both across a restart;
// an element that is not there is refused by the client.
TEST_F(ArrayE2eTest, AfterTakesOneElementOrTheWholeArrayAcrossARestart) {
  StartOrFail();
  const int sleeper = Submit({"--", "sleep", "2"});
  const std::string array = std::to_string(
      Submit({"--array", "1-2", "--after", std::to_string(sleeper), "--no-output", "--", "sh", "-c",
              "sleep $HPC_BATCH_ARRAY_INDEX; touch done.$HPC_BATCH_ARRAY_INDEX"}));
  const int on_one =
      Submit({"--after", array + "_2", "--no-output", "--", "sh", "-c", "test -e done.2"});
  const int on_all = Submit(
      {"--after", array, "--no-output", "--", "sh", "-c", "test -e done.1 && test -e done.2"});
  const int on_any = Submit({"--after-any", std::to_string(sleeper) + "," + array + "_1",
                             "--no-output", "--", "sh", "-c", "test -e done.1"});
  ASSERT_GT(on_one, 0);
  ASSERT_GT(on_all, 0);
  ASSERT_GT(on_any, 0);
  CommandResult missing = Dispatch({"new", "--after", array + "_7", "--", "true"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "dispatch: --after: no such job " + array + "_7\n");

  daemon_.Stop();
  StartOrFail();
  for (int job : {on_one, on_all, on_any}) {
    CommandResult waited = Dispatch({"wait", std::to_string(job)});
    EXPECT_EQ(waited.exit_code, 0) << job << ": " << waited.err << daemon_.log();
  }
}

// attach ARRAY follows its one queued or running element, and refuses,
// naming them, while several are; attach and wait take ARRAY_INDEX.
TEST_F(ArrayE2eTest, AttachTakesAnElementOrAnArrayWithOneElementLeft) {
  StartOrFail();
  const int sleeper = Submit({"--", "sleep", "30"});
  const std::string array = std::to_string(
      Submit({"--array", "1-2", "--after-any", std::to_string(sleeper), "--output", daemon_.work(),
              "--", "sh", "-c", "sleep 3; echo out=$HPC_BATCH_ARRAY_INDEX"}));

  CommandResult several = Dispatch({"attach", array});
  EXPECT_EQ(several.exit_code, 1);
  EXPECT_EQ(several.err, "dispatch: 2 elements of array " + array + " are queued or running (" +
                             array + "_1, " + array + "_2); attach follows one: name it as " +
                             array + "_INDEX\n");
  EXPECT_EQ(Dispatch({"kill", array + "_1"}).exit_code, 0);
  EXPECT_EQ(Dispatch({"kill", std::to_string(sleeper)}).exit_code, 0);
  CommandResult one = Dispatch({"attach", array});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "out=2\n") << one.err;

  CommandResult element = Dispatch({"attach", array + "_2"});
  EXPECT_EQ(element.exit_code, 0) << element.err;
  EXPECT_NE(element.err.find("has finished"), std::string::npos) << element.err;
  CommandResult waited = Dispatch({"wait", array + "_2"});
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_EQ(Dispatch({"attach", array + "_9"}).err, "dispatch: no such job " + array + "_9\n");
}

// The queue file and its journal are lost while an array waits: its
// elements, which have no spec of their own yet, are rebuilt from the
// array's (the --after is the broker's alone and goes with the file).
TEST_F(ArrayE2eTest, AQueuedArrayOutlivesTheLossOfTheQueueFile) {
  StartOrFail();
  const int sleeper = Submit({"--", "sleep", "30"});
  const std::string array =
      std::to_string(Submit({"--array", "0-2", "--after", std::to_string(sleeper), "--output",
                             daemon_.work(), "--", "sh", "-c", "echo i=$HPC_BATCH_ARRAY_INDEX"}));

  daemon_.Stop();
  std::filesystem::remove(daemon_.state() + "/broker/queue.json");
  std::filesystem::remove(daemon_.state() + "/broker/queue.journal");
  StartOrFail();
  CommandResult waited = Dispatch({"wait", array});
  EXPECT_EQ(waited.exit_code, 0) << waited.err << daemon_.log();
  for (const char* index : {"0", "1", "2"}) {
    EXPECT_EQ(testing::ReadText(daemon_.work() + "/output." + array + "_" + index + ".log"),
              std::string("i=") + index + "\n");
  }
  EXPECT_NE(RowWithId(Dispatch({"list", "--finished"}).out, array + "_[0-2]").find("3 done"),
            std::string::npos)
      << Dispatch({"list", "--finished"}).out;
  EXPECT_EQ(Dispatch({"kill", std::to_string(sleeper)}).exit_code, 0);
}

// --max-queued-per-user counts an array's queued elements as jobs, both
// for a later plain job and for a later array.
TEST_F(ArrayE2eTest, QueuedElementsCountAgainstThePerUserCap) {
  StartOrFail({"--max-queued-per-user", "5"});
  const std::string sleeper = std::to_string(Submit({"--", "sleep", "30"}));
  // Started, so that it is not one of the queued jobs counted.
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return Dispatch({"list", "--json"}).out.find("\"state\":\"running\"") != std::string::npos;
      },
      std::chrono::seconds(20)));
  Submit({"--array", "1-3", "--after", sleeper, "--no-output", "--", "true"});
  CommandResult second = Dispatch({"new", "--array", "1-3", "--after", sleeper, "--", "true"});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("you have 3 queued jobs and this array has 3 elements"),
            std::string::npos)
      << second.err;
  Submit({"--after", sleeper, "--no-output", "--", "true"});
  Submit({"--after", sleeper, "--no-output", "--", "true"});
  CommandResult sixth = Dispatch({"new", "--after", sleeper, "--no-output", "--", "true"});
  EXPECT_EQ(sixth.exit_code, 1);
  EXPECT_NE(sixth.err.find("you have 5 queued jobs, the most one user may have"), std::string::npos)
      << sixth.err;
  EXPECT_EQ(Dispatch({"kill", sleeper}).exit_code, 0);
}

TEST_F(ArrayE2eTest, ThePerUserCapCountsElementsAndABadSpecIsAUsageError) {
  StartOrFail({"--max-queued-per-user", "5"});
  CommandResult big = Dispatch({"new", "--array", "1-6", "--", "true"});
  EXPECT_EQ(big.exit_code, 1);
  EXPECT_NE(big.err.find("you have 0 queued jobs and this array has 6 elements"), std::string::npos)
      << big.err;
  CommandResult bad = Dispatch({"new", "--array", "5-1", "--", "true"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("argument --array: '5-1' ends before it starts"), std::string::npos)
      << bad.err;
  CommandResult file =
      Dispatch({"new", "--array", "1-2", "--output", daemon_.work() + "/one.log", "--", "true"});
  EXPECT_EQ(file.exit_code, 2);
  EXPECT_NE(file.err.find("with --array, --output names a directory"), std::string::npos)
      << file.err;
  CommandResult error_file =
      Dispatch({"new", "--array", "1-2", "--error", daemon_.work() + "/errors.log", "--", "true"});
  EXPECT_EQ(error_file.exit_code, 2);
  EXPECT_NE(error_file.err.find("with --array, --error names a directory"), std::string::npos)
      << error_file.err;
}

// --error DIR: each element's stderr in its own error.ARRAY_INDEX.log,
// apart from its stdout.
TEST_F(ArrayE2eTest, EachElementsStderrGoesToItsOwnFile) {
  StartOrFail();
  const std::string errors = daemon_.work();  // stems differ: output., error.
  CommandResult submitted = Dispatch(
      {"new", "--max-mem", "0.25", "--array", "1-2", "--output", daemon_.work(), "--error", errors,
       "--", "sh", "-c", "echo out=$HPC_BATCH_ARRAY_INDEX; echo err=$HPC_BATCH_ARRAY_INDEX >&2"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(submitted.out, match, std::regex("^array ([0-9]+) of 2 jobs ")))
      << submitted.out;
  const std::string array = match[1];
  CommandResult waited = Dispatch({"wait", array});
  EXPECT_EQ(waited.exit_code, 0) << waited.err << daemon_.log();
  for (const char* index : {"1", "2"}) {
    const std::string element = array + "_" + index;
    EXPECT_EQ(testing::ReadText(daemon_.work() + "/output." + element + ".log"),
              std::string("out=") + index + "\n");
    EXPECT_EQ(testing::ReadText(errors + "/error." + element + ".log"),
              std::string("err=") + index + "\n");
  }
}

}  // namespace
}  // namespace hpcb::e2e

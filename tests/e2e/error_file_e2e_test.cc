// `dispatch new --error PATH` with the real daemon and client: stderr in a
// file of its own (a directory gets error.<id>.log), stdout alone in the
// output, error_dest in list --json and info.json, kept across a restart,
// and a stderr that cannot be delivered kept and delivered later.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/e2e/daemon_harness.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::e2e {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

class ErrorFileE2eTest : public ::testing::Test {
 protected:
  void StartOrFail() { ASSERT_TRUE(daemon_.Start()) << daemon_.log(); }
  // A directory under the work dir the client (and so the delivery) may write.
  std::string MakeDir(const std::string& name) {
    const std::string path = daemon_.work() + "/" + name;
    fs::create_directories(path);
    if (::geteuid() == 0) (void)!::chown(path.c_str(), daemon_.client_uid(), daemon_.client_gid());
    return path;
  }
  bool HasText(const std::string& path, const std::string& text) {
    return fs::exists(path) && testing::ReadText(path) == text;
  }
  DaemonHarness daemon_;
};

TEST_F(ErrorFileE2eTest, StderrGoesToItsOwnFileAndSurvivesARestart) {
  StartOrFail();
  const std::string errs = MakeDir("errs");
  const std::vector<std::string> job = {"--", "sh", "-c", "echo out; echo err >&2"};
  std::vector<std::string> to_dir = {"new", "--max-mem", "0.25", "--error", "errs"};
  to_dir.insert(to_dir.end(), job.begin(), job.end());
  CommandResult first = daemon_.Dispatch(to_dir);
  ASSERT_EQ(first.exit_code, 0) << first.err << daemon_.log();
  EXPECT_NE(first.out.find("stderr will be saved to " + errs + "/error.1.log\n"), std::string::npos)
      << first.out;
  std::vector<std::string> to_file = {"new", "--max-mem", "0.25", "--error", "errs/two.txt"};
  to_file.insert(to_file.end(), job.begin(), job.end());
  ASSERT_EQ(daemon_.Dispatch(to_file).exit_code, 0);
  std::vector<std::string> merged = {"new", "--max-mem", "0.25"};
  merged.insert(merged.end(), job.begin(), job.end());
  ASSERT_EQ(daemon_.Dispatch(merged).exit_code, 0);

  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return HasText(errs + "/error.1.log", "err\n") && HasText(errs + "/two.txt", "err\n");
      },
      seconds(15)))
      << daemon_.log();
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] { return HasText(daemon_.work() + "/output.3.log", "out\nerr\n"); }, seconds(15)))
      << "without --error the two stay merged";
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return HasText(daemon_.work() + "/output.1.log", "out\n") &&
               HasText(daemon_.work() + "/output.2.log", "out\n");
      },
      seconds(15)));
  const std::string info = testing::ReadText(daemon_.state() + "/jobs/1/info.json");
  EXPECT_NE(info.find("\"error_dest\":[\"" + errs + "/error.1.log\"]"), std::string::npos) << info;

  // One still running across a restart keeps its place for stderr.
  CommandResult slow =
      daemon_.Dispatch({"new", "--max-mem", "0.25", "--error", "errs", "--", "sh", "-c",
                        DaemonHarness::UntilReleased() + "; echo late >&2; echo on-stdout"});
  ASSERT_EQ(slow.exit_code, 0) << slow.err;
  const int slow_id = DaemonHarness::JobIdIn(slow.out);
  const std::string slow_err = errs + "/error." + std::to_string(slow_id) + ".log";
  daemon_.Stop();
  StartOrFail();
  EXPECT_NE(daemon_.Dispatch({"list", "--json"}).out.find("\"error_dest\":[\"" + slow_err + "\"]"),
            std::string::npos)
      << daemon_.Dispatch({"list", "--json"}).out;
  daemon_.Release();
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return HasText(slow_err, "late\n"); }, seconds(20)))
      << daemon_.log();
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return HasText(daemon_.work() + "/output." + std::to_string(slow_id) + ".log",
                       "on-stdout\n");
      },
      seconds(10)));
}

TEST_F(ErrorFileE2eTest, AStderrThatCannotBeDeliveredIsKeptAndDeliveredLater) {
  StartOrFail();
  const std::string errs = MakeDir("closed");
  CommandResult submit =
      daemon_.Dispatch({"new", "--max-mem", "0.25", "--error", errs, "--", "sh", "-c",
                        DaemonHarness::UntilReleased() + "; echo kept-err >&2; echo fine"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  ::chmod(errs.c_str(), 0555);  // the owner may no longer write there
  daemon_.Release();
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return daemon_.Dispatch({"list", "--finished"}).err.find("could not save") !=
               std::string::npos;
      },
      seconds(15)))
      << daemon_.log();
  CommandResult listed = daemon_.Dispatch({"list", "--finished"});
  EXPECT_NE(listed.err.find("job 1: could not save stderr to " + errs + "/error.1.log: "),
            std::string::npos)
      << listed.err;
  EXPECT_EQ(daemon_.ReadWorkFile("output.1.log"), "fine\n") << "stdout was delivered";
  ::chmod(errs.c_str(), 0755);
  CommandResult again = daemon_.Dispatch({"output", "1"});
  EXPECT_EQ(again.exit_code, 0) << again.err << daemon_.log();
  EXPECT_TRUE(DaemonHarness::WaitFor([&] { return HasText(errs + "/error.1.log", "kept-err\n"); },
                                     seconds(10)));
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return daemon_.Dispatch({"list", "--finished"}).err.find("job 1:") == std::string::npos;
      },
      seconds(10)));

  // --to moves stdout only: with stdout delivered, the kept stderr goes to
  // its own place and stdout's stays on record.
  ASSERT_EQ(
      daemon_
          .Dispatch({"new", "--max-mem", "0.25", "--error", errs, "--", "sh", "-c",
                     DaemonHarness::UntilReleased("go2") + "; echo err-two >&2; echo out-two"})
          .exit_code,
      0);
  ::chmod(errs.c_str(), 0555);
  daemon_.Release("go2");
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return daemon_.Dispatch({"list", "--finished"}).err.find("job 2: could not save") !=
               std::string::npos;
      },
      seconds(15)))
      << daemon_.log();
  ::chmod(errs.c_str(), 0755);
  const std::string elsewhere = MakeDir("elsewhere");
  CommandResult moved = daemon_.Dispatch({"output", "2", "--to", elsewhere});
  EXPECT_EQ(moved.exit_code, 0) << moved.err << daemon_.log();
  EXPECT_EQ(moved.out, "job 2's output is now at " + daemon_.work() + "/output.2.log\n");
  EXPECT_TRUE(DaemonHarness::WaitFor([&] { return HasText(errs + "/error.2.log", "err-two\n"); },
                                     seconds(10)));
  EXPECT_FALSE(fs::exists(elsewhere + "/output.2.log"));
  EXPECT_EQ(daemon_.ReadWorkFile("output.2.log"), "out-two\n");
}

TEST_F(ErrorFileE2eTest, ABadErrorPlaceIsRefusedAtSubmit) {
  StartOrFail();
  CommandResult missing =
      daemon_.Dispatch({"new", "--error", "/nonexistent/dir/e.log", "--", "true"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("cannot save output there"), std::string::npos) << missing.err;
  CommandResult empty = daemon_.Dispatch({"new", "--error", "", "--", "true"});
  EXPECT_EQ(empty.exit_code, 2) << empty.err;
  EXPECT_NE(empty.err.find("argument --error: expected a directory or a file, not ''"),
            std::string::npos)
      << empty.err;
  CommandResult both = daemon_.Dispatch({"new", "--no-output", "--error", ".", "--", "true"});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_NE(both.err.find("--error and --no-output cannot be combined"), std::string::npos)
      << both.err;
}

}  // namespace
}  // namespace hpcb::e2e

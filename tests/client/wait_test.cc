#include "client/wait.h"

#include <gtest/gtest.h>

#include <sstream>

namespace hpcb::client {
namespace {

protocol::JobRow Ended(std::uint64_t id, std::optional<std::int64_t> exit_code,
                       std::optional<protocol::JobReason> reason = std::nullopt) {
  protocol::JobRow row;
  row.id = id;
  row.state = protocol::JobState::kDone;
  row.exit_code = exit_code;
  row.reason = reason;
  return row;
}

TEST(WaitExitCodeTest, OneJobGivesItsOwnExitCode) {
  EXPECT_EQ(WaitExitCode({Ended(1, 0)}), 0);
  EXPECT_EQ(WaitExitCode({Ended(1, 3)}), 3);
  EXPECT_EQ(WaitExitCode({Ended(1, std::nullopt, protocol::JobReason::kDependency)}), 1);
  EXPECT_EQ(WaitExitCode({Ended(1, 0, protocol::JobReason::kKilled)}), 1)
      << "killed is a failure even if the job exited 0 on SIGTERM";
  EXPECT_EQ(WaitExitCode({Ended(1, -9, protocol::JobReason::kTimeout)}), 1);
}

TEST(WaitExitCodeTest, SeveralJobsGiveOneIfAnyFailed) {
  EXPECT_EQ(WaitExitCode({Ended(1, 0), Ended(2, 0)}), 0);
  EXPECT_EQ(WaitExitCode({Ended(1, 0), Ended(2, 7)}), 1);
}

// The pause between polls doubles up to max_s; the deadline cuts the last.
TEST(WaitForJobsTest, ThePauseBetweenPollsBacksOff) {
  int polls = 0;
  auto poll =
      [&polls](
          const std::set<std::uint64_t>& ids) -> Result<std::map<std::uint64_t, protocol::JobRow>> {
    ++polls;
    std::map<std::uint64_t, protocol::JobRow> rows;
    for (std::uint64_t id : ids) {
      rows[id].id = id;
      rows[id].state = protocol::JobState::kRunning;
    }
    return rows;
  };
  std::ostringstream out;
  std::ostringstream err;
  PollPace pace;
  pace.poll_s = 0.01;
  pace.max_s = 0.08;
  // Steady, 0.3 s is 31 polls; backing off, 0 .01 .03 .07 .15 .23 .3: 7.
  EXPECT_EQ(WaitForJobs({1}, WaitOptions{0.3}, pace, poll, Io{out, err, false}), kExitTimeout);
  EXPECT_GE(polls, 6);
  EXPECT_LE(polls, 9);
}

TEST(WaitProgressTest, NamesEachUnfinishedJobAndHowLongItRan) {
  protocol::JobRow running;
  running.id = 5;
  running.state = protocol::JobState::kRunning;
  running.start_time = 1000;
  protocol::JobRow queued;
  queued.id = 6;
  EXPECT_EQ(ProgressLine({running, queued}, 1063),
            "waiting for job 5 (running 1m03s), job 6 (queued)");
  EXPECT_EQ(EndedLine(Ended(5, 2)), "job 5 finished: exit 2\n");
  // Never started: said as such, with the job's detail where it has one.
  EXPECT_EQ(EndedLine(Ended(6, std::nullopt, protocol::JobReason::kDependency)),
            "job 6 did not run: dependency\n");
  protocol::JobRow killed = Ended(7, std::nullopt, protocol::JobReason::kKilled);
  EXPECT_EQ(EndedLine(killed), "job 7 did not run: killed while queued\n");
  killed.start_time = 1000;
  EXPECT_EQ(EndedLine(killed), "job 7 finished: killed\n");
  // An exit learned before the start (recovery): it ran.
  EXPECT_EQ(EndedLine(Ended(9, 3)), "job 9 finished: exit 3\n");
  protocol::JobRow failed = Ended(8, std::nullopt, protocol::JobReason::kError);
  failed.detail = "failed to start: cannot execute x";
  EXPECT_EQ(EndedLine(failed), "job 8 did not run: failed to start: cannot execute x\n");
}

}  // namespace
}  // namespace hpcb::client

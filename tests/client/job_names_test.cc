#include "client/job_names.h"

#include <gtest/gtest.h>

#include <vector>

namespace hpcb::client {
namespace {

using protocol::JobRow;
using protocol::JobState;
using Ids = std::vector<std::uint64_t>;

JobRow Named(std::uint64_t id, const char* name, JobState state) {
  JobRow row;
  row.id = id;
  if (name != nullptr) row.name = name;
  row.state = state;
  return row;
}

const std::vector<JobRow> kRows = {
    Named(3, "train", JobState::kDone),   Named(5, "train", JobState::kRunning),
    Named(4, "train", JobState::kQueued), Named(6, "prep", JobState::kDone),
    Named(7, "prep", JobState::kDone),    Named(8, nullptr, JobState::kRunning),
};

TEST(JobsForNameTest, KillTakesEveryQueuedOrRunningJobOfThatName) {
  EXPECT_EQ(JobsForName(kRows, "train", NamedUse::kKill).value(), (Ids{4, 5}));
  Result<Ids> finished = JobsForName(kRows, "prep", NamedUse::kKill);
  ASSERT_FALSE(finished);
  EXPECT_EQ(finished.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(finished.error().message(), "every job of yours named 'prep' has finished (6, 7)");
}

TEST(JobsForNameTest, WaitTakesTheUnfinishedOnesElseTheNewestFinished) {
  EXPECT_EQ(JobsForName(kRows, "train", NamedUse::kWait).value(), (Ids{4, 5}));
  EXPECT_EQ(JobsForName(kRows, "prep", NamedUse::kWait).value(), (Ids{7}));
}

TEST(JobsForNameTest, AttachFollowsOneJobAndListsTheCandidatesOtherwise) {
  Result<Ids> several = JobsForName(kRows, "train", NamedUse::kAttach);
  ASSERT_FALSE(several);
  EXPECT_EQ(several.error().message(),
            "2 jobs of yours named 'train' are queued or running (4, 5); attach follows one: "
            "name it by id");
  EXPECT_EQ(JobsForName(kRows, "prep", NamedUse::kAttach).value(), (Ids{7}));
}

TEST(JobsForNameTest, NoJobOfThatNameIsNotFound) {
  for (NamedUse use : {NamedUse::kKill, NamedUse::kWait, NamedUse::kAttach}) {
    Result<Ids> none = JobsForName(kRows, "nosuch", use);
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().code(), ErrorCode::kNotFound);
    EXPECT_EQ(none.error().message(), "no job of yours is named 'nosuch'");
  }
}

}  // namespace
}  // namespace hpcb::client

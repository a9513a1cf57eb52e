#include "client/array_ids.h"

#include <gtest/gtest.h>

#include <vector>

#include "client/array_rows.h"

namespace hpcb::client {
namespace {

using protocol::JobRow;
using protocol::JobState;
using Ids = std::vector<std::uint64_t>;

JobRow ElementRow(std::uint64_t id, std::uint64_t array, std::uint32_t index, JobState state) {
  JobRow row;
  row.id = id;
  row.array_id = array;
  row.array_index = index;
  row.state = state;
  return row;
}

JobRow PlainRow(std::uint64_t id, JobState state) {
  JobRow row;
  row.id = id;
  row.state = state;
  return row;
}

// Array 12 of indices 1, 5, 9 (ids 13 to 15), then job 16 alone.
const std::vector<JobRow> kArrayRows = {
    ElementRow(13, 12, 1, JobState::kDone), ElementRow(14, 12, 5, JobState::kRunning),
    ElementRow(15, 12, 9, JobState::kQueued), PlainRow(16, JobState::kQueued)};

std::vector<TypedId> Typed(const std::vector<std::string>& words) {
  std::vector<TypedId> typed;
  for (const std::string& word : words)
    typed.push_back(ParseTypedId(word).value());
  return typed;
}

TEST(ArrayIdsTest, ParsesPlainIdsAndElementIds) {
  EXPECT_EQ(ParseTypedId("12")->id, 12u);
  EXPECT_FALSE(ParseTypedId("12")->index);
  EXPECT_EQ(ParseTypedId("12_3")->index, 3u);
  for (const char* bad : {"", "_3", "12_", "12_x", "12_3_4", "0_1", "12_1234567", "a_1", "12_-1"}) {
    Result<TypedId> parsed = ParseTypedId(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().message(), "argument ID: invalid job id: '" + std::string(bad) + "'");
  }
}

TEST(ArrayIdsTest, ElementIdsAreLookedUpAndArraysExpandedOnlyWhenAsked) {
  EXPECT_EQ(ListIdsOf(Typed({"12_5", "12", "16"})), (Ids{12, 16}));
  EXPECT_EQ(ResolveTypedIds(Typed({"12_5", "16"}), kArrayRows, false).value(), (Ids{14, 16}));
  EXPECT_EQ(ResolveTypedIds(Typed({"12"}), kArrayRows, false).value(), (Ids{12}));
  EXPECT_EQ(ResolveTypedIds(Typed({"12", "16"}), kArrayRows, true).value(), (Ids{13, 14, 15, 16}));
  // An id nobody lists stays, for the daemon to say it has no such job.
  EXPECT_EQ(ResolveTypedIds(Typed({"99"}), kArrayRows, true).value(), (Ids{99}));
  Result<Ids> missing = ResolveTypedIds(Typed({"12_2"}), kArrayRows, false);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message(), "no such job 12_2");
}

TEST(ArrayIdsTest, AfterListsTakeElementsAndSayWhichWordIsNotAnId) {
  Result<std::vector<TypedId>> ids = ParseTypedIdList("12_5,16", "--after");
  ASSERT_TRUE(ids);
  ASSERT_EQ(ids->size(), 2u);
  EXPECT_EQ(TypedIdText((*ids)[0]), "12_5");
  EXPECT_EQ(TypedIdText((*ids)[1]), "16");
  for (const char* bad : {"", "3,", "0", "12_x", "x"}) {
    Result<std::vector<TypedId>> parsed = ParseTypedIdList(bad, "--after-any");
    ASSERT_FALSE(parsed) << bad;
    EXPECT_NE(parsed.error().message().find("argument --after-any: '"), std::string::npos);
    EXPECT_NE(parsed.error().message().find("' is not a job id (expected ID[,ID...])"),
              std::string::npos);
  }
}

TEST(ArrayRowsTest, AnArrayIsOneLineWithCountsUnlessExpanded) {
  std::vector<ListLine> folded = ListLines(kArrayRows, /*fold=*/true);
  ASSERT_EQ(folded.size(), 2u);
  EXPECT_EQ(folded[0].id, "12_[1,5,9]");
  EXPECT_EQ(folded[0].summary, "1 running, 1 queued, 1 done");
  EXPECT_EQ(folded[1].id, "16");
  EXPECT_FALSE(folded[1].summary);
  std::vector<ListLine> expanded = ListLines(kArrayRows, /*fold=*/false);
  ASSERT_EQ(expanded.size(), 4u);
  EXPECT_EQ(expanded[1].id, "12_5");
  EXPECT_FALSE(expanded[1].summary);
  EXPECT_EQ(JobIdText(kArrayRows[2]), "12_9");
  EXPECT_EQ(JobIdText(kArrayRows[3]), "16");
}

TEST(ArrayRowsTest, SlurmsFoldedPendingElementsJoinTheirArraysLine) {
  JobRow pending = PlainRow(12, JobState::kQueued);
  pending.array_id = 12;  // squeue's 12_[4-100%8]: no index of its own
  JobRow held = ElementRow(12, 12, 3, JobState::kQueued);
  held.held = true;
  std::vector<ListLine> lines =
      ListLines({ElementRow(12, 12, 1, JobState::kRunning), held, pending},
                /*fold=*/true);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].id, "12_[1,3]");
  EXPECT_EQ(lines[0].summary, "1 running, 1 queued, 1 held");
  EXPECT_EQ(ListLines({pending}, true)[0].id, "12_[*]");
}

}  // namespace
}  // namespace hpcb::client

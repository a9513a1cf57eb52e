#include "executor/spec_journal.h"

#include <gtest/gtest.h>

#include <string>

#include "protocol/codec.h"

namespace hpcb::executor {
namespace {

LaunchSpec Spec(std::uint64_t id, std::uint64_t revision) {
  LaunchSpec spec;
  spec.id = id;
  spec.who = {1000, 1000, "alice", {1000}};
  spec.argv = {"echo", "job " + std::to_string(id)};
  spec.cwd = "/tmp";
  spec.revision = revision;
  return spec;
}

std::string Saved(std::uint64_t id, std::uint64_t revision) {
  return SpecSavedLine(id, protocol::Encode(Spec(id, revision)));
}

SpecJournalReplay Replay(const std::string& text) {
  SpecJournalReplay replay;
  ReplaySpecJournal(text, replay);
  return replay;
}

TEST(SpecJournalTest, TheChecksumIsTheCommonCrc32) {
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(Crc32(""), 0u);
}

TEST(SpecJournalTest, TheHighestRevisionOfEachJobWinsWhateverTheLineOrder) {
  SpecJournalReplay replay = Replay(Saved(1, 5) + Saved(2, 3) + Saved(1, 4) + Saved(2, 7));
  EXPECT_EQ(replay.tail, SpecJournalTail::kClean);
  EXPECT_EQ(replay.lines, 4u);
  ASSERT_TRUE(replay.latest.at(1));
  EXPECT_EQ(replay.latest.at(1)->revision, 5u);
  EXPECT_EQ(replay.latest.at(2)->revision, 7u);
  EXPECT_EQ(replay.latest.at(2)->argv.back(), "job 2");
}

TEST(SpecJournalTest, AForgottenJobStaysForgottenWhateverComesAfter) {
  SpecJournalReplay replay = Replay(Saved(3, 1) + SpecForgottenLine(3) + Saved(3, 9));
  ASSERT_TRUE(replay.latest.contains(3));
  EXPECT_FALSE(replay.latest.at(3).has_value());
}

TEST(SpecJournalTest, TwoFilesAddUp) {
  SpecJournalReplay replay;
  ReplaySpecJournal(Saved(1, 2), replay);
  ReplaySpecJournal(Saved(1, 1) + Saved(4, 3), replay);
  EXPECT_EQ(replay.latest.at(1)->revision, 2u) << "the older file's newer line stays";
  EXPECT_TRUE(replay.latest.contains(4));
  EXPECT_EQ(replay.lines, 3u);
}

TEST(SpecJournalTest, EveryCutOfTheLastLineLosesThatLineOnly) {
  const std::string kept = Saved(1, 1) + Saved(2, 2);
  const std::string last = Saved(3, 3);
  for (std::size_t cut = 1; cut < last.size(); ++cut) {
    SpecJournalReplay replay = Replay(kept + last.substr(0, cut));
    EXPECT_EQ(replay.tail, SpecJournalTail::kTorn) << "cut at " << cut;
    EXPECT_EQ(replay.latest.size(), 2u) << "cut at " << cut;
    EXPECT_FALSE(replay.latest.contains(3)) << "cut at " << cut;
  }
}

TEST(SpecJournalTest, AZeroFilledTailIsNothing) {
  SpecJournalReplay replay = Replay(Saved(1, 1) + std::string(4096, '\0'));
  EXPECT_EQ(replay.tail, SpecJournalTail::kClean);
  EXPECT_EQ(replay.latest.size(), 1u);
}

TEST(SpecJournalTest, ADamagedLineInTheMiddleIsSkippedAndReportedAndTheRestKept) {
  std::string middle = Saved(2, 2);
  middle[middle.find("job 2")] = 'J';  // one flipped byte, still valid JSON
  SpecJournalReplay replay = Replay(Saved(1, 1) + middle + Saved(3, 3));
  EXPECT_EQ(replay.tail, SpecJournalTail::kCorrupt);
  EXPECT_NE(replay.problem.find("line 2"), std::string::npos) << replay.problem;
  EXPECT_NE(replay.problem.find("checksum"), std::string::npos) << replay.problem;
  EXPECT_EQ(replay.skipped, 1u);
  EXPECT_TRUE(replay.latest.contains(1));
  EXPECT_FALSE(replay.latest.contains(2));
  EXPECT_TRUE(replay.latest.contains(3));
}

TEST(SpecJournalTest, ATornLineEndedByTheNextAppendCostsOnlyItself) {
  const std::string torn = Saved(2, 2).substr(0, 40);
  SpecJournalReplay replay = Replay(Saved(1, 1) + torn + "\n" + Saved(3, 3));
  EXPECT_EQ(replay.skipped, 1u);
  EXPECT_TRUE(replay.latest.contains(1));
  EXPECT_TRUE(replay.latest.contains(3));
}

TEST(SpecJournalTest, ALineIsRefusedWhenItsSpecIsAnotherJobsOrIdIsZero) {
  const std::string other = SpecSavedLine(5, protocol::Encode(Spec(6, 1)));
  SpecJournalReplay replay = Replay(other + SpecForgottenLine(0) + Saved(7, 1));
  EXPECT_EQ(replay.skipped, 2u);
  EXPECT_NE(replay.problem.find("another job"), std::string::npos) << replay.problem;
  EXPECT_EQ(replay.latest.size(), 1u);
  EXPECT_TRUE(replay.latest.contains(7));
}

TEST(SpecJournalTest, GarbageNamesWhatIsWrong) {
  for (const std::string text : {"hello\n", "zzzzzzzz {}\n", "00000000 {}\n"}) {
    SpecJournalReplay replay = Replay(text);
    EXPECT_EQ(replay.tail, SpecJournalTail::kTorn) << text;
    EXPECT_FALSE(replay.problem.empty()) << text;
    EXPECT_TRUE(replay.latest.empty()) << text;
  }
}

}  // namespace
}  // namespace hpcb::executor

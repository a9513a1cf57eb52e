// The run record's one file of lines: what the executor reads back after
// each way a shepherd's writing can end.
#include "common/host/run_record.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "tests/testing/temp_dir.h"

namespace hpcb::host {
namespace {

using hpcb::testing::ReadText;
using hpcb::testing::TempDir;
using hpcb::testing::WriteText;

RunRecord Starting(std::uint64_t id) {
  RunRecord record;
  record.id = id;
  record.shepherd = 900;
  return record;
}

RunRecord Started(std::uint64_t id) {
  RunRecord record = Starting(id);
  record.pid = 901;
  record.start_time = 1000.5;
  return record;
}

RunRecord Ended(std::uint64_t id) {
  RunRecord record = Started(id);
  record.status = 3 << 8;
  record.end_time = 1002.0;
  return record;
}

std::string Line(const RunRecord& record) {
  return protocol::Encode(record) + "\n";
}

TEST(RunRecordTest, TheLastLineThatReadsIsTheJobsState) {
  Result<RunRecord> ended =
      ParseRunRecord(Line(Starting(5)) + Line(Started(5)) + Line(Ended(5)), 5);
  ASSERT_TRUE(ended) << ended.error().message();
  EXPECT_EQ(ended->pid, 901);
  EXPECT_EQ(ended->status, 3 << 8);
  // A record of the previous release: one object, with or without its
  // newline.
  EXPECT_EQ(ParseRunRecord(protocol::Encode(Started(5)), 5)->pid, 901);
}

// A record written by a release from before shepherd_start, pid_start and
// placement (a job kept running across the upgrade) still reads.
TEST(RunRecordTest, ALineFromBeforeTheNewerFieldsReads) {
  RunRecord record = Started(7);
  record.shepherd_start = 55;
  record.pid_start = 56;
  std::string line = protocol::Encode(record);
  for (const std::string field :
       {",\"shepherd_start\":55", ",\"pid_start\":56", ",\"placement\":[]"}) {
    ASSERT_NE(line.find(field), std::string::npos) << line;
    line.erase(line.find(field), field.size());
  }
  Result<RunRecord> read = ParseRunRecord(line + "\n", 7);
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_EQ(read->pid, 901);
  EXPECT_EQ(read->shepherd_start, 0u);
  EXPECT_EQ(read->pid_start, 0u);
  EXPECT_FALSE(read->placement.has_value());
}

TEST(RunRecordTest, ALineTornByACrashLeavesTheStateBeforeIt) {
  const std::string end = Line(Ended(5));
  const std::string before = Line(Starting(5)) + Line(Started(5));
  for (std::size_t cut = 0; cut + 1 < end.size(); ++cut) {
    Result<RunRecord> read = ParseRunRecord(before + end.substr(0, cut), 5);
    ASSERT_TRUE(read) << "cut at " << cut << ": " << read.error().message();
    EXPECT_EQ(read->pid, 901) << "cut at " << cut;
    EXPECT_FALSE(read->status) << "cut at " << cut << ": a torn end was taken";
  }
  // Blocks the file was given but whose data never reached the disk.
  Result<RunRecord> zeros = ParseRunRecord(before + std::string(300, '\0'), 5);
  ASSERT_TRUE(zeros) << zeros.error().message();
  EXPECT_FALSE(zeros->status);
}

TEST(RunRecordTest, NothingReadableOrAnotherJobsLinesAreAnError) {
  EXPECT_FALSE(ParseRunRecord("", 5));
  EXPECT_FALSE(ParseRunRecord("\n\n", 5));
  EXPECT_FALSE(ParseRunRecord("{\"garbled", 5));
  Result<RunRecord> other = ParseRunRecord(Line(Ended(6)), 5);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message().find("names job 6"), std::string::npos)
      << other.error().message();
  // A stray line of another job does not hide this job's state.
  EXPECT_EQ(ParseRunRecord(Line(Started(5)) + Line(Ended(6)), 5)->pid, 901);
}

TEST(RunRecordTest, OnlyTheLastFewLinesAreRead) {
  // The writer makes three lines at most: a record whose last several do
  // not read is damaged, and its beginning is not searched (a megabyte of
  // junk would otherwise hold the executor's loop on every read).
  std::string junk;
  for (int i = 0; i < 3; ++i)
    junk += "{}\n";
  EXPECT_EQ(ParseRunRecord(Line(Started(5)) + junk, 5)->pid, 901);
  for (int i = 0; i < 10; ++i)
    junk += "x\n";
  EXPECT_FALSE(ParseRunRecord(Line(Started(5)) + junk, 5));
}

TEST(RunRecordTest, AShepherdKilledWhileMakingTheFileLeavesNoRecord) {
  TempDir dir;
  const std::string path = RunRecordPath(dir.path(), 5);
  // What a kill between making the file and writing its line leaves.
  WriteText(path + ".tmp", "");
  Result<RunRecord> none = LoadRunRecord(dir.path(), 5);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), ErrorCode::kNotFound) << none.error().message();
  // The next try makes it over the leftover.
  RunRecordWriter writer(dir.path());
  ASSERT_TRUE(writer.Append(Starting(5), Sync::kNone));
  EXPECT_EQ(ReadText(path), Line(Starting(5)));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(RunRecordTest, TheWriterMakesOneFileAndAddsALinePerState) {
  TempDir dir;
  const std::string path = RunRecordPath(dir.path(), 5);
  WriteText(path, Line(Ended(5)));  // an earlier try's, which a start removes
  RunRecordWriter writer(dir.path());
  ASSERT_TRUE(writer.Append(Starting(5), Sync::kNone));
  Result<RunRecord> starting = LoadRunRecord(dir.path(), 5);
  ASSERT_TRUE(starting) << starting.error().message();
  EXPECT_EQ(starting->pid, 0) << "the earlier try's end was not emptied out";
  ASSERT_TRUE(writer.Append(Started(5), Sync::kNone));
  ASSERT_TRUE(writer.Append(Ended(5), Sync::kNow));
  EXPECT_EQ(ReadText(path), Line(Starting(5)) + Line(Started(5)) + Line(Ended(5)));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(LoadRunRecord(dir.path(), 5)->status, 3 << 8);
}

TEST(RunRecordTest, AFileRemovedOrReplacedUnderTheWriterIsMadeAgainWithTheNewestState) {
  TempDir dir;
  const std::string path = RunRecordPath(dir.path(), 5);
  RunRecordWriter writer(dir.path());
  ASSERT_TRUE(writer.Append(Starting(5), Sync::kNone));
  ASSERT_TRUE(writer.Append(Started(5), Sync::kNone));
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_TRUE(writer.Append(Ended(5), Sync::kNow));
  EXPECT_EQ(ReadText(path), Line(Ended(5))) << "the end went into the removed file";

  RunRecordWriter again(dir.path());
  ASSERT_TRUE(again.Append(Started(5), Sync::kNone));
  WriteText(path + ".other", Line(Starting(5)));
  ASSERT_EQ(::rename((path + ".other").c_str(), path.c_str()), 0);
  ASSERT_TRUE(again.Append(Ended(5), Sync::kNone));
  EXPECT_EQ(ReadText(path), Line(Ended(5))) << "the end went into the replaced file";
}

TEST(RunRecordTest, ALineThatFailsHalfWayIsWrittenOverByTheNext) {
  TempDir dir;
  RunRecordWriter writer(dir.path());
  ASSERT_TRUE(writer.Append(Starting(5), Sync::kNone));
  const std::size_t first = Line(Starting(5)).size();
  // The file may grow by only a few bytes more: the next line is cut short
  // and refused (EFBIG, with SIGXFSZ ignored).
  struct sigaction ignore {};
  struct sigaction saved {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &saved), 0);
  struct rlimit limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &limit), 0);
  const struct rlimit small { first + 20, limit.rlim_max };
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  Result<void> cut = writer.Append(Started(5), Sync::kNone);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  ASSERT_EQ(::sigaction(SIGXFSZ, &saved, nullptr), 0);
  EXPECT_FALSE(cut) << "the line fit after all";

  ASSERT_TRUE(writer.Append(Ended(5), Sync::kNone));
  EXPECT_EQ(ReadText(RunRecordPath(dir.path(), 5)), Line(Starting(5)) + Line(Ended(5)));
  EXPECT_EQ(LoadRunRecord(dir.path(), 5)->status, 3 << 8);
}

}  // namespace
}  // namespace hpcb::host

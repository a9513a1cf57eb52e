#include "executor/spec_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "executor/spec_journal.h"
#include "protocol/codec.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::executor {
namespace {

namespace fs = std::filesystem;

// A journal with no line in it: empty, or the zeros it was made with.
bool NoLines(const std::string& text) {
  return text.find_first_not_of(std::string_view("\0", 1)) == std::string::npos;
}

constexpr const char* kSecret = "hunter2-secret";

LaunchSpec Spec(std::uint64_t id) {
  LaunchSpec spec;
  spec.id = id;
  spec.who = {1000, 1000, "alice", {1000}};
  spec.argv = {"echo", "job " + std::to_string(id)};
  spec.cwd = "/tmp";
  return spec;
}

class SpecStoreTest : public ::testing::Test {
 protected:
  std::string Path(std::uint64_t id) const {
    return dir_.path() + "/" + std::to_string(id) + ".json";
  }
  bool Exists(const std::string& path) const { return ::access(path.c_str(), F_OK) == 0; }
  // What a power cut may leave of a file that was renamed but not flushed.
  void EmptyFile(std::uint64_t id) const { testing::WriteText(Path(id), ""); }

  // A queued job's spec, with a forwarded secret in its environment,
  // saved and committed.
  static LaunchSpec SaveWithSecret(SpecStore& store) {
    LaunchSpec spec = Spec(1);
    spec.env = {{"TOKEN", kSecret}};
    EXPECT_TRUE(store.Save(spec));
    EXPECT_TRUE(store.Commit());
    return spec;
  }
  static bool HoldsSecret(const std::string& path) {
    return testing::ReadText(path).find(kSecret) != std::string::npos;
  }

  testing::TempDir dir_;
};

TEST_F(SpecStoreTest, ASaveIsInTheJournalAtOnceAndItsFileIsWrittenWhenTheJournalIsCut) {
  SpecStore store(dir_.path());
  store.set_limits(/*rotate_bytes=*/1, /*files_per_turn=*/8);
  LaunchSpec spec = Spec(1);
  Result<std::uint64_t> bytes = store.Save(spec);
  ASSERT_TRUE(bytes) << bytes.error().message();
  EXPECT_EQ(*bytes, protocol::Encode(spec).size());
  EXPECT_EQ(spec.revision, 1u);
  SpecJournalReplay replay;
  ReplaySpecJournal(testing::ReadText(store.journal_path()), replay);
  ASSERT_TRUE(replay.latest.contains(1)) << "a crash of the process finds the line";
  ASSERT_TRUE(store.Commit());
  EXPECT_FALSE(Exists(Path(1))) << "a checkpoint, written only when the journal is cut";

  ASSERT_TRUE(store.Settle());  // rotated: journal.old holds the line
  EXPECT_TRUE(Exists(store.old_journal_path()));
  EXPECT_FALSE(Exists(Path(1)));
  ASSERT_TRUE(store.Settle());  // the file written and flushed, journal.old gone
  EXPECT_FALSE(Exists(store.old_journal_path()));
  Result<LaunchSpec> on_disk = LoadSpec(dir_.path(), 1);
  ASSERT_TRUE(on_disk) << on_disk.error().message();
  EXPECT_EQ(on_disk->revision, 1u);
}

TEST_F(SpecStoreTest, AJobSavedThriceBetweenCutsCostsOneFileAndAForgottenOneNone) {
  SpecStore store(dir_.path());
  LaunchSpec kept = Spec(1);
  LaunchSpec forgotten = Spec(2);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(store.Save(kept));
    ASSERT_TRUE(store.Save(forgotten));
    ASSERT_TRUE(store.Commit());
    ASSERT_TRUE(store.Settle());
  }
  ASSERT_TRUE(store.Forget(2));
  ASSERT_TRUE(store.Commit());
  ASSERT_TRUE(store.Checkpoint());
  EXPECT_EQ(LoadSpec(dir_.path(), 1)->revision, 5u);
  EXPECT_FALSE(Exists(Path(2)));
}

TEST_F(SpecStoreTest, ANewJournalIsZerosThatItsLinesOverwriteFromTheStart) {
  SpecStore store(dir_.path());
  store.set_limits(/*rotate_bytes=*/10000, /*files_per_turn=*/8);
  LaunchSpec spec = Spec(1);
  ASSERT_TRUE(store.Save(spec));
  ASSERT_TRUE(store.Commit());
  const std::string text = testing::ReadText(store.journal_path());
  EXPECT_EQ(text.size(), 12288u) << "the rotation size, in whole pages";
  const std::string line = SpecSavedLine(1, protocol::Encode(spec));
  EXPECT_EQ(text.substr(0, line.size()), line);
  EXPECT_TRUE(NoLines(text.substr(line.size())));
  // Reopened, as after a crash: the next line follows the last one.
  SpecStore again(dir_.path());
  LaunchSpec two = Spec(2);
  ASSERT_TRUE(again.Save(two));
  SpecJournalReplay replay;
  ReplaySpecJournal(testing::ReadText(again.journal_path()), replay);
  EXPECT_EQ(replay.tail, SpecJournalTail::kClean) << replay.problem;
  EXPECT_EQ(replay.latest.size(), 2u);
}

TEST_F(SpecStoreTest, RevisionsOnlyGrowEvenFromAStaleCopy) {
  SpecStore store(dir_.path());
  LaunchSpec spec = Spec(1);
  LaunchSpec stale = spec;
  ASSERT_TRUE(store.Save(spec));
  ASSERT_TRUE(store.Save(spec));
  ASSERT_TRUE(store.Save(stale));
  EXPECT_EQ(spec.revision, 2u);
  EXPECT_EQ(stale.revision, 3u);
  LaunchSpec loaded = Spec(2);
  loaded.revision = 40;  // read from its file at start-up
  ASSERT_TRUE(store.Save(loaded));
  EXPECT_EQ(loaded.revision, 41u);
}

// What a power cut right after the answers can leave: spec files empty,
// missing or one version old. Only the journal's fdatasync was waited for.
TEST_F(SpecStoreTest, AfterAPowerCutEverySpecComesBackFromTheJournal) {
  {
    SpecStore store(dir_.path());
    for (std::uint64_t id : {1, 2, 3}) {
      LaunchSpec spec = Spec(id);
      ASSERT_TRUE(store.Save(spec));
    }
    ASSERT_TRUE(store.Commit());
    ASSERT_TRUE(store.Settle());
    LaunchSpec running = Spec(3);
    running.revision = 3;
    running.state = protocol::SpecState::kRunning;
    running.pid = 4242;
    ASSERT_TRUE(store.Save(running));
    ASSERT_TRUE(store.Commit());  // acknowledged; the file not yet rewritten
  }
  EmptyFile(1);
  fs::remove(Path(2));

  SpecStore again(dir_.path());
  Result<SpecStore::Opened> opened = again.Open();
  ASSERT_TRUE(opened) << opened.error().message();
  EXPECT_EQ(opened->restored, 3u);
  EXPECT_EQ(opened->highest_id, 3u);
  EXPECT_TRUE(opened->problems.empty());
  for (std::uint64_t id : {1, 2}) {
    Result<LaunchSpec> spec = LoadSpec(dir_.path(), id);
    ASSERT_TRUE(spec) << id << ": " << spec.error().message();
  }
  Result<LaunchSpec> running = LoadSpec(dir_.path(), 3);
  ASSERT_TRUE(running);
  EXPECT_EQ(running->state, protocol::SpecState::kRunning);
  EXPECT_EQ(running->pid, 4242);
  EXPECT_TRUE(NoLines(testing::ReadText(again.journal_path()))) << "a fresh journal once restored";
}

TEST_F(SpecStoreTest, AFileNewerThanTheJournalIsKept) {
  {
    SpecStore store(dir_.path());
    LaunchSpec spec = Spec(1);
    ASSERT_TRUE(store.Save(spec));
    ASSERT_TRUE(store.Commit());
  }
  LaunchSpec newer = Spec(1);
  newer.revision = 9;
  newer.argv = {"echo", "newer"};
  ASSERT_TRUE(SaveSpec(dir_.path(), newer, host::Sync::kNone));
  SpecStore again(dir_.path());
  Result<SpecStore::Opened> opened = again.Open();
  ASSERT_TRUE(opened);
  EXPECT_EQ(opened->restored, 0u);
  EXPECT_EQ(LoadSpec(dir_.path(), 1)->argv.back(), "newer");
}

TEST_F(SpecStoreTest, AForgottenJobIsNotBroughtBackByAFileThePowerCutKept) {
  {
    SpecStore store(dir_.path());
    LaunchSpec spec = Spec(5);
    ASSERT_TRUE(store.Save(spec));
    ASSERT_TRUE(store.Commit());
    ASSERT_TRUE(store.Settle());
    ASSERT_TRUE(store.Forget(5));
    EXPECT_FALSE(Exists(Path(5)));
    ASSERT_TRUE(store.Commit());
  }
  LaunchSpec back = Spec(5);
  back.revision = 1;
  ASSERT_TRUE(SaveSpec(dir_.path(), back, host::Sync::kNone));  // the unlink was not durable
  SpecStore again(dir_.path());
  Result<SpecStore::Opened> opened = again.Open();
  ASSERT_TRUE(opened);
  EXPECT_EQ(opened->forgotten, std::vector<std::uint64_t>{5});
  EXPECT_EQ(opened->highest_id, 5u) << "a forgotten id still counts as taken";
  EXPECT_FALSE(Exists(Path(5)));
}

TEST_F(SpecStoreTest, TheJournalIsCutOnlyOnceEveryFileItCoversIsFlushed) {
  SpecStore store(dir_.path());
  store.set_limits(/*rotate_bytes=*/1, /*files_per_turn=*/2);
  for (std::uint64_t id = 1; id <= 5; ++id) {
    LaunchSpec spec = Spec(id);
    ASSERT_TRUE(store.Save(spec));
  }
  ASSERT_TRUE(store.Commit());
  ASSERT_TRUE(store.Settle());  // files written, journal rotated
  EXPECT_TRUE(Exists(store.old_journal_path()));
  EXPECT_TRUE(NoLines(testing::ReadText(store.journal_path())));
  LaunchSpec again = Spec(2);
  again.revision = 2;
  ASSERT_TRUE(store.Save(again));  // its newest line now in the current journal
  ASSERT_TRUE(store.Commit());
  ASSERT_TRUE(store.Settle());  // two of 1, 3, 4, 5 flushed
  EXPECT_TRUE(Exists(store.old_journal_path())) << "files it covers are not all flushed yet";
  // Both journals are read back meanwhile.
  {
    SpecJournalReplay replay;
    ReplaySpecJournal(testing::ReadText(store.old_journal_path()), replay);
    ReplaySpecJournal(testing::ReadText(store.journal_path()), replay);
    EXPECT_EQ(replay.latest.size(), 5u);
  }
  ASSERT_TRUE(store.Settle());
  EXPECT_FALSE(Exists(store.old_journal_path()));
  ASSERT_TRUE(store.Settle());
  EXPECT_TRUE(Exists(store.old_journal_path()))
      << "the current journal is past the limit: cut next";
}

TEST_F(SpecStoreTest, ACheckpointLeavesEveryFileCurrentAndNoJournal) {
  SpecStore store(dir_.path());
  store.set_limits(1, 1);
  for (std::uint64_t id = 1; id <= 3; ++id) {
    LaunchSpec spec = Spec(id);
    ASSERT_TRUE(store.Save(spec));
    ASSERT_TRUE(store.Commit());
    ASSERT_TRUE(store.Settle());
  }
  LaunchSpec last = Spec(3);
  last.revision = 3;
  last.argv = {"echo", "last"};
  ASSERT_TRUE(store.Save(last));
  ASSERT_TRUE(store.Commit());
  ASSERT_TRUE(store.Checkpoint());
  EXPECT_TRUE(NoLines(testing::ReadText(store.journal_path())));
  EXPECT_FALSE(Exists(store.old_journal_path()));
  EXPECT_EQ(LoadSpec(dir_.path(), 3)->argv.back(), "last");
}

TEST_F(SpecStoreTest, ADamagedJournalIsSetAsideReportedAndItsGoodLinesUsed) {
  std::string bad = SpecSavedLine(2, protocol::Encode(Spec(2)));
  bad[12] ^= 1;
  LaunchSpec one = Spec(1);
  one.revision = 1;
  LaunchSpec three = Spec(3);
  three.revision = 1;
  testing::WriteText(dir_.path() + "/journal", SpecSavedLine(1, protocol::Encode(one)) + bad +
                                                   SpecSavedLine(3, protocol::Encode(three)) +
                                                   "0123");
  SpecStore store(dir_.path());
  Result<SpecStore::Opened> opened = store.Open();
  ASSERT_TRUE(opened) << opened.error().message();
  ASSERT_EQ(opened->problems.size(), 1u);
  EXPECT_NE(opened->problems[0].find("checksum"), std::string::npos) << opened->problems[0];
  EXPECT_TRUE(Exists(dir_.path() + "/journal.corrupt"));
  EXPECT_EQ(opened->restored, 2u);
  EXPECT_TRUE(Exists(Path(1)));
  EXPECT_FALSE(Exists(Path(2)));
  EXPECT_TRUE(Exists(Path(3)));
}

TEST_F(SpecStoreTest, ATornTailIsNotADamage) {
  LaunchSpec one = Spec(1);
  one.revision = 1;
  const std::string line = SpecSavedLine(1, protocol::Encode(one));
  testing::WriteText(dir_.path() + "/journal", line + line.substr(0, 30));
  SpecStore store(dir_.path());
  Result<SpecStore::Opened> opened = store.Open();
  ASSERT_TRUE(opened);
  EXPECT_TRUE(opened->problems.empty());
  EXPECT_EQ(opened->restored, 1u);
  EXPECT_FALSE(Exists(dir_.path() + "/journal.corrupt"));
}

TEST_F(SpecStoreTest, AForwardedEnvironmentIsBlankedOnceALineWithoutItIsDurable) {
  SpecStore store(dir_.path());
  LaunchSpec spec = SaveWithSecret(store);
  ASSERT_TRUE(store.Settle());
  EXPECT_TRUE(HoldsSecret(store.journal_path()));
  spec.env.clear();  // started: the spec no longer needs it
  spec.state = protocol::SpecState::kRunning;
  ASSERT_TRUE(store.Save(spec));
  EXPECT_TRUE(HoldsSecret(store.journal_path()))
      << "blanked before the line that replaces it was durable";
  ASSERT_TRUE(store.Commit());
  const std::string journal = testing::ReadText(store.journal_path());
  EXPECT_EQ(journal.find(kSecret), std::string::npos) << journal;
  SpecJournalReplay replay;
  ReplaySpecJournal(journal, replay);
  EXPECT_EQ(replay.tail, SpecJournalTail::kClean) << replay.problem;
  EXPECT_EQ(replay.skipped, 0u);
  ASSERT_TRUE(replay.latest.at(1));
  EXPECT_EQ(replay.latest.at(1)->state, protocol::SpecState::kRunning);
}

TEST_F(SpecStoreTest, ALineSavedForSoonRidesOnTheNextFlushThatAnAnswerNeeds) {
  SpecStore store(dir_.path());
  LaunchSpec ended = Spec(1);
  ASSERT_TRUE(store.Save(ended));
  ASSERT_TRUE(store.Commit());
  EXPECT_FALSE(store.lines_pending());
  ended.state = protocol::SpecState::kExited;
  ended.exit_code = 0;
  ASSERT_TRUE(store.Save(ended, SpecStore::Flush::kSoon));
  const auto now = SpecStore::Clock::now();
  ASSERT_TRUE(store.Commit(now));
  EXPECT_TRUE(store.lines_pending()) << "an end the run record also holds was flushed alone";
  LaunchSpec submitted = Spec(2);
  ASSERT_TRUE(store.Save(submitted));  // an acknowledgment: its turn flushes both
  ASSERT_TRUE(store.Commit(now));
  EXPECT_FALSE(store.lines_pending());
  // Written at once all the same: a crash of the process finds it.
  SpecJournalReplay replay;
  ReplaySpecJournal(testing::ReadText(store.journal_path()), replay);
  ASSERT_TRUE(replay.latest.at(1));
  EXPECT_EQ(replay.latest.at(1)->state, protocol::SpecState::kExited);
}

TEST_F(SpecStoreTest, ALineSavedForSoonIsFlushedOnceItIsTheBoundOld) {
  SpecStore store(dir_.path());
  LaunchSpec spec = Spec(1);
  spec.state = protocol::SpecState::kExited;
  const auto before = SpecStore::Clock::now();
  ASSERT_TRUE(store.Save(spec, SpecStore::Flush::kSoon));
  ASSERT_TRUE(store.Commit(before));
  EXPECT_TRUE(store.lines_pending());
  ASSERT_TRUE(store.Commit(SpecStore::Clock::now() + SpecStore::kSoonBound));
  EXPECT_FALSE(store.lines_pending());
}

TEST_F(SpecStoreTest, ALineThatDropsAForwardedEnvironmentDoesNotLag) {
  SpecStore store(dir_.path());
  LaunchSpec spec = SaveWithSecret(store);
  spec.env.clear();
  spec.state = protocol::SpecState::kRunning;
  ASSERT_TRUE(store.Save(spec, SpecStore::Flush::kSoon));
  ASSERT_TRUE(store.Commit(SpecStore::Clock::now()));
  EXPECT_FALSE(store.lines_pending());
  EXPECT_FALSE(HoldsSecret(store.journal_path())) << "the secret outlived the turn";
}

TEST_F(SpecStoreTest, ALineThatStandsInForAFileHoldingAnEnvironmentDoesNotLag) {
  SpecStore store(dir_.path());
  LaunchSpec spec = SaveWithSecret(store);
  ASSERT_TRUE(store.Checkpoint());  // the file holds it; no journal line does
  ASSERT_TRUE(HoldsSecret(Path(1)));
  spec.env.clear();
  spec.state = protocol::SpecState::kRunning;
  ASSERT_TRUE(store.Save(spec, SpecStore::Flush::kSoon));
  ASSERT_TRUE(store.Commit(SpecStore::Clock::now()));
  EXPECT_FALSE(store.lines_pending());
  EXPECT_FALSE(Exists(Path(1))) << "the file with the secret outlived the turn";
}

TEST_F(SpecStoreTest, ACutOfTheJournalFlushesALaggingLineFirst) {
  SpecStore store(dir_.path());
  store.set_limits(/*rotate_bytes=*/1, /*files_per_turn=*/0);
  LaunchSpec spec = Spec(1);
  spec.state = protocol::SpecState::kExited;
  ASSERT_TRUE(store.Save(spec, SpecStore::Flush::kSoon));
  ASSERT_TRUE(store.Commit(SpecStore::Clock::now()));
  ASSERT_TRUE(store.lines_pending());
  ASSERT_TRUE(store.Settle());
  EXPECT_TRUE(Exists(store.old_journal_path()));
  EXPECT_FALSE(store.lines_pending()) << "journal.old is taken as durable once it is cut";
}

TEST_F(SpecStoreTest, JournalOldGoesOnlyOnceTheLaggingLinesStandingInForItAreFlushed) {
  SpecStore store(dir_.path());
  store.set_limits(/*rotate_bytes=*/1, /*files_per_turn=*/32);
  LaunchSpec spec = Spec(1);
  ASSERT_TRUE(store.Save(spec));
  ASSERT_TRUE(store.Commit());
  ASSERT_TRUE(store.Settle());  // cut: job 1's line is only in journal.old
  ASSERT_TRUE(Exists(store.old_journal_path()));
  spec.state = protocol::SpecState::kExited;
  ASSERT_TRUE(store.Save(spec, SpecStore::Flush::kSoon));  // newer, in the current journal
  ASSERT_TRUE(store.Commit(SpecStore::Clock::now()));
  ASSERT_TRUE(store.lines_pending());
  ASSERT_TRUE(store.Settle());  // job 1 skipped for its newer line; journal.old goes
  ASSERT_FALSE(Exists(store.old_journal_path()));
  EXPECT_FALSE(store.lines_pending())
      << "journal.old removed while the only other line of job 1 was not durable";
}

TEST_F(SpecStoreTest, AnEnvironmentInTheRetiredJournalIsBlankedThereToo) {
  SpecStore store(dir_.path());
  store.set_limits(1, 0);  // rotate at once; retire nothing yet
  LaunchSpec spec = SaveWithSecret(store);
  ASSERT_TRUE(store.Settle());
  ASSERT_TRUE(HoldsSecret(store.old_journal_path()));
  spec.env.clear();
  ASSERT_TRUE(store.Save(spec));
  ASSERT_TRUE(store.Commit());
  EXPECT_FALSE(HoldsSecret(store.old_journal_path()));
  EXPECT_FALSE(HoldsSecret(store.journal_path()));
}

TEST_F(SpecStoreTest, AForgottenJobsEnvironmentIsBlanked) {
  SpecStore store(dir_.path());
  SaveWithSecret(store);
  ASSERT_TRUE(store.Forget(1));
  ASSERT_TRUE(store.Commit());
  EXPECT_FALSE(HoldsSecret(store.journal_path()));
}

TEST_F(SpecStoreTest, AQueuedJobsFileHoldingItsEnvironmentGoesOnceTheJobRuns) {
  SpecStore store(dir_.path());
  LaunchSpec spec = SaveWithSecret(store);
  ASSERT_TRUE(store.Checkpoint());  // a cut while queued: the file holds it
  ASSERT_TRUE(HoldsSecret(Path(1)));
  spec.env.clear();
  spec.state = protocol::SpecState::kRunning;
  ASSERT_TRUE(store.Save(spec));
  EXPECT_TRUE(Exists(Path(1))) << "gone before the line standing in for it was durable";
  ASSERT_TRUE(store.Commit());
  EXPECT_FALSE(Exists(Path(1)));
  ASSERT_TRUE(store.Checkpoint());
  const std::string file = testing::ReadText(Path(1));
  EXPECT_EQ(file.find(kSecret), std::string::npos) << file;
  EXPECT_EQ(LoadSpec(dir_.path(), 1)->state, protocol::SpecState::kRunning);
}

TEST_F(SpecStoreTest, AFileReadAtStartUpWithAnEnvironmentGoesOnceTheJobRuns) {
  LaunchSpec spec = Spec(1);
  spec.env = {{"TOKEN", kSecret}};
  spec.revision = 1;
  ASSERT_TRUE(SaveSpec(dir_.path(), spec, host::Sync::kNone));
  SpecStore store(dir_.path());
  ASSERT_TRUE(store.Open());
  store.FileHoldsEnvironment(1);  // as Recover says of each spec it reads
  spec.env.clear();
  ASSERT_TRUE(store.Save(spec));
  ASSERT_TRUE(store.Commit());
  EXPECT_FALSE(Exists(Path(1)));
}

TEST_F(SpecStoreTest, AJournalWhoseCutWaitsStopsTakingSavesAtItsLimit) {
  SpecStore store(dir_.path());
  store.set_limits(/*rotate_bytes=*/1, /*files_per_turn=*/8, /*max_bytes=*/4096);
  fs::create_directory(Path(1));  // its file cannot be written: the cut waits
  LaunchSpec spec = Spec(1);
  ASSERT_TRUE(store.Save(spec));
  ASSERT_TRUE(store.Commit());
  ASSERT_TRUE(store.Settle());  // rotated; the cut now waits on job 1's file
  Result<std::uint64_t> saved = std::uint64_t{0};
  for (int i = 0; i < 100 && saved; ++i) {
    LaunchSpec other = Spec(2);
    saved = store.Save(other);
  }
  ASSERT_FALSE(saved) << "the journal grew without bound";
  EXPECT_EQ(saved.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(saved.error().message().find("full"), std::string::npos) << saved.error().message();
  EXPECT_LE(fs::file_size(store.journal_path()), 4096u);
}

TEST_F(SpecStoreTest, AJournalThatCannotBeReadStopsTheStartAndIsLeftAsItIs) {
  fs::create_directory(dir_.path() + "/journal");  // read(2) fails: EISDIR
  LaunchSpec one = Spec(1);
  one.revision = 1;
  testing::WriteText(dir_.path() + "/journal.old", SpecSavedLine(1, protocol::Encode(one)));
  SpecStore store(dir_.path());
  Result<SpecStore::Opened> opened = store.Open();
  ASSERT_FALSE(opened);
  EXPECT_NE(opened.error().message().find("spec journal"), std::string::npos)
      << opened.error().message();
  EXPECT_TRUE(Exists(dir_.path() + "/journal.old")) << "the readable one is kept too";
  EXPECT_FALSE(Exists(Path(1))) << "nothing is half done";
}

TEST_F(SpecStoreTest, ASpecWhoseFileCannotBeWrittenKeepsItsJournalUntilItCanBe) {
  SpecStore store(dir_.path());
  store.set_limits(1, 8);
  fs::create_directory(Path(1));  // its rename fails: a directory is in the way
  LaunchSpec spec = Spec(1);
  ASSERT_TRUE(store.Save(spec));
  ASSERT_TRUE(store.Commit());
  ASSERT_TRUE(store.Settle());  // rotated
  ASSERT_TRUE(store.Settle()) << "a file that cannot be written is not the loop's end";
  EXPECT_TRUE(Exists(store.old_journal_path())) << "its only durable copy stays";
  fs::remove(Path(1));
  ASSERT_TRUE(store.Settle());
  EXPECT_FALSE(Exists(store.old_journal_path()));
  EXPECT_TRUE(LoadSpec(dir_.path(), 1));
}

TEST_F(SpecStoreTest, AJournalThatCannotBeWrittenFailsTheSave) {
  SpecStore store(dir_.path() + "/missing");
  LaunchSpec spec = Spec(1);
  Result<std::uint64_t> saved = store.Save(spec);
  ASSERT_FALSE(saved);
  EXPECT_NE(saved.error().message().find("journal"), std::string::npos) << saved.error().message();
  EXPECT_EQ(spec.revision, 0u) << "not saved: its revision is not taken";
  EXPECT_TRUE(store.Commit()) << "nothing was written";
}

}  // namespace
}  // namespace hpcb::executor
